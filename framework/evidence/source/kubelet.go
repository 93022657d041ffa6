package source

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/faultline/faultline/framework/evidence"
)

// maxKubeletBody bounds what is read from the kubelet; /pods of a lab node
// is far smaller.
const maxKubeletBody = 32 << 20

// Kubelet reads one node's kubelet API on its own port: which pods it holds
// (/pods) and what it says of its own health (/healthz).
type Kubelet struct {
	name     evidence.Source
	baseURL  string
	client   *http.Client
	subjects evidence.Subjects
}

// NewKubelet makes a reader named "kubelet/<host>" for the kubelet at
// baseURL ("https://10.231.11.31:10250"), authenticating with tlsConfig's
// client certificate.
func NewKubelet(host, baseURL string, tlsConfig *tls.Config, subjects evidence.Subjects) *Kubelet {
	tr := &http.Transport{TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 4, ForceAttemptHTTP2: true}
	return &Kubelet{
		name:     evidence.Source("kubelet/" + host),
		baseURL:  strings.TrimRight(baseURL, "/"),
		client:   &http.Client{Transport: tr},
		subjects: subjects,
	}
}

func (k *Kubelet) Source() evidence.Source { return k.name }

func (k *Kubelet) Questions() []evidence.Question {
	return []evidence.Question{evidence.PodObject, evidence.KubeletHealth}
}

func (k *Kubelet) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		a := k.readPod(ctx)
		mu.Lock()
		out[evidence.PodObject] = a
		mu.Unlock()
	})
	wg.Go(func() {
		a := k.readHealth(ctx)
		mu.Lock()
		out[evidence.KubeletHealth] = a
		mu.Unlock()
	})
	wg.Wait()
	return out
}

func (k *Kubelet) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.baseURL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKubeletBody))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return resp.StatusCode, body, nil
}

func (k *Kubelet) readPod(ctx context.Context) evidence.Answer {
	code, body, err := k.get(ctx, "/pods")
	at := now()
	if err != nil {
		return evidence.UnreadableAnswer(Reason(err), at)
	}
	if code != http.StatusOK {
		return evidence.UnreadableAnswer(fmt.Sprintf("error: GET /pods: HTTP %d: %s", code, FirstLine(body)), at)
	}
	pod, err := FindKubeletPod(body, k.subjects.PodNamespace, k.subjects.PodName)
	if err != nil {
		return evidence.UnreadableAnswer("error: "+err.Error(), at)
	}
	rv := ""
	if pod != nil {
		rv = pod.ResourceVersion
	}
	return answer(PodOf(pod), at, rv)
}

func (k *Kubelet) readHealth(ctx context.Context) evidence.Answer {
	code, body, err := k.get(ctx, "/healthz")
	at := now()
	if err != nil {
		return evidence.UnreadableAnswer(Reason(err), at)
	}
	// Any status is the kubelet's own answer about itself; only a failure
	// to ask is unreadable.
	return answer(evidence.KubeletHealthValue{StatusCode: code, Body: FirstLine(body)}, at, "")
}

// FindKubeletPod finds a pod in the kubelet's /pods answer (a v1 PodList);
// nil means the kubelet holds no such pod. A kubelet may hold an old and a
// new pod of the same name while one is terminating; then the one not being
// deleted is returned.
func FindKubeletPod(body []byte, namespace, name string) (*corev1.Pod, error) {
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding kubelet /pods: %w", err)
	}
	if list.Kind != "" && list.Kind != "PodList" {
		return nil, fmt.Errorf("kubelet /pods is a %s, want PodList", list.Kind)
	}
	var found *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Namespace != namespace || p.Name != name {
			continue
		}
		if found == nil || (found.DeletionTimestamp != nil && p.DeletionTimestamp == nil) {
			found = p
		}
	}
	return found, nil
}

// FirstLine is the first line of b, trimmed and cut to 200 bytes, for
// reasons.
func FirstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
