package source

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// crictlSeparator splits the two crictl answers in one SSH round trip.
const crictlSeparator = "----faultline-crictl-containers----"

// crictlCommand lists every pod sandbox and every container (exited ones
// too: a container that stopped is evidence) as JSON. The two crictl calls
// run at once, each into a file of its own, because each is a process start
// and a runtime connection and a snapshot round waits for the slower.
const crictlCommand = `d=$(mktemp -d) || exit 1; trap 'rm -rf "$d"' EXIT; ` +
	`crictl pods -o json >"$d/pods" & ` +
	`crictl ps -a -o json >"$d/ps"; ps=$?; wait $!; pods=$?; ` +
	`[ $pods -eq 0 ] || exit $pods; [ $ps -eq 0 ] || exit $ps; ` +
	`cat "$d/pods"; echo ` + crictlSeparator + `; cat "$d/ps"`

// The pod labels the kubelet puts on sandboxes and containers
// (pkg/kubelet/types/labels.go).
const (
	labelPodName      = "io.kubernetes.pod.name"
	labelPodNamespace = "io.kubernetes.pod.namespace"
	labelPodUID       = "io.kubernetes.pod.uid"
)

// Runtime reads one node's container runtime with crictl over SSH: which
// sandboxes and containers of the stateful pod it holds, and whether one
// runs there.
type Runtime struct {
	name     evidence.Source
	host     lab.Host
	subjects evidence.Subjects
	also     []RuntimeQuestion
}

// RuntimeQuestion is a suite's own question about a node's container
// runtime, answered from the listings the runtime source takes anyway, so
// that a suite asking after its own containers starts no second crictl.
type RuntimeQuestion struct {
	Question evidence.Question
	// Answer makes the question's value from the listings; an error is an
	// unreadable answer naming it.
	Answer func(Crictl) (any, error)
}

// NamespaceContainers is the RuntimeQuestion q answered with every
// container of namespace (an evidence.NamespaceContainersValue).
func NamespaceContainers(q evidence.Question, namespace string) RuntimeQuestion {
	return RuntimeQuestion{Question: q, Answer: func(c Crictl) (any, error) {
		return c.NamespaceContainers(namespace), nil
	}}
}

// NewRuntime makes a reader named "cri/<host>"; it answers PodRunningHere
// and each of also.
func NewRuntime(host lab.Host, subjects evidence.Subjects, also ...RuntimeQuestion) *Runtime {
	return &Runtime{name: evidence.Source("cri/" + host.Name()), host: host, subjects: subjects, also: also}
}

func (r *Runtime) Source() evidence.Source { return r.name }

func (r *Runtime) Questions() []evidence.Question {
	qs := []evidence.Question{evidence.PodRunningHere}
	for _, a := range r.also {
		qs = append(qs, a.Question)
	}
	return qs
}

func (r *Runtime) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	res, err := r.host.Run(ctx, crictlCommand)
	at := now()
	if err != nil {
		return r.unreadable(Reason(err), at)
	}
	if res.ExitCode != 0 {
		return r.unreadable(fmt.Sprintf("error: crictl on %s exited %d: %s", r.host.Name(), res.ExitCode, firstLine([]byte(res.Stderr))), at)
	}
	pods, containers, ok := strings.Cut(res.Stdout, crictlSeparator)
	if !ok {
		return r.unreadable("error: crictl output lacks its separator", at)
	}
	c, err := ParseCrictl([]byte(pods), []byte(containers))
	if err != nil {
		return r.unreadable("error: "+err.Error(), at)
	}
	out := map[evidence.Question]evidence.Answer{
		evidence.PodRunningHere: answer(c.RuntimePod(r.subjects.PodNamespace, r.subjects.PodName), at, ""),
	}
	for _, a := range r.also {
		v, err := a.Answer(c)
		if err != nil {
			out[a.Question] = evidence.UnreadableAnswer("error: "+err.Error(), at)
			continue
		}
		out[a.Question] = answer(v, at, "")
	}
	return out
}

// unreadable answers every question of r with why.
func (r *Runtime) unreadable(why string, at time.Time) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	for _, q := range r.Questions() {
		out[q] = evidence.UnreadableAnswer(why, at)
	}
	return out
}

// crictl prints the CRI responses with protojson: lowerCamelCase names,
// enums by name, int64 nanoseconds as strings.
type crictlPods struct {
	Items []struct {
		ID       string `json:"id"`
		Metadata struct {
			Name      string `json:"name"`
			UID       string `json:"uid"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		State     string            `json:"state"`
		CreatedAt protoInt64        `json:"createdAt"`
		Labels    map[string]string `json:"labels"`
	} `json:"items"`
}

type crictlContainers struct {
	Containers []struct {
		ID           string `json:"id"`
		PodSandboxID string `json:"podSandboxId"`
		Metadata     struct {
			Name string `json:"name"`
		} `json:"metadata"`
		State     string            `json:"state"`
		CreatedAt protoInt64        `json:"createdAt"`
		Labels    map[string]string `json:"labels"`
	} `json:"containers"`
}

// protoInt64 reads protojson's int64 (a quoted decimal) or a bare number.
type protoInt64 int64

func (p *protoInt64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "" || s == "null" {
		*p = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("int64 %s: %w", b, err)
	}
	*p = protoInt64(n)
	return nil
}

func (p protoInt64) time() time.Time {
	if p == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(p)).UTC()
}

// Crictl is what `crictl pods -o json` and `crictl ps -a -o json` list
// on one node: every sandbox and every container, of every namespace.
type Crictl struct {
	pods crictlPods
	ctrs crictlContainers
}

// ParseCrictl decodes the two listings.
func ParseCrictl(podsJSON, containersJSON []byte) (Crictl, error) {
	var c Crictl
	if err := json.Unmarshal(podsJSON, &c.pods); err != nil {
		return Crictl{}, fmt.Errorf("decoding crictl pods: %w", err)
	}
	ctrs, err := parseCrictlContainers(containersJSON)
	if err != nil {
		return Crictl{}, err
	}
	c.ctrs = ctrs
	return c, nil
}

func parseCrictlContainers(containersJSON []byte) (crictlContainers, error) {
	var ctrs crictlContainers
	if err := json.Unmarshal(containersJSON, &ctrs); err != nil {
		return crictlContainers{}, fmt.Errorf("decoding crictl ps: %w", err)
	}
	return ctrs, nil
}

// RuntimePodFromCrictl picks the pod's sandboxes and containers out of
// `crictl pods -o json` and `crictl ps -a -o json`. Running means a ready
// sandbox of the pod with a running container in it.
func RuntimePodFromCrictl(podsJSON, containersJSON []byte, namespace, name string) (evidence.RuntimePodValue, error) {
	c, err := ParseCrictl(podsJSON, containersJSON)
	if err != nil {
		return evidence.RuntimePodValue{}, err
	}
	return c.RuntimePod(namespace, name), nil
}

// RuntimePod is the pod's sandboxes and containers. Running means a ready
// sandbox of the pod with a running container in it.
func (c Crictl) RuntimePod(namespace, name string) evidence.RuntimePodValue {
	v := evidence.RuntimePodValue{Sandboxes: []evidence.RuntimeSandbox{}, Containers: []evidence.RuntimeContainer{}}
	readySandbox := map[string]bool{}
	for _, p := range c.pods.Items {
		if p.Metadata.Namespace != namespace || p.Metadata.Name != name {
			continue
		}
		v.Sandboxes = append(v.Sandboxes, evidence.RuntimeSandbox{
			ID: p.ID, Name: p.Metadata.Name, Namespace: p.Metadata.Namespace, UID: p.Metadata.UID,
			State: p.State, CreatedAt: p.CreatedAt.time(),
		})
		if p.State == "SANDBOX_READY" {
			readySandbox[p.ID] = true
		}
	}
	for _, ct := range c.ctrs.Containers {
		if ct.Labels[labelPodNamespace] != namespace || ct.Labels[labelPodName] != name {
			continue
		}
		v.Containers = append(v.Containers, evidence.RuntimeContainer{
			ID: ct.ID, Name: ct.Metadata.Name, SandboxID: ct.PodSandboxID, PodUID: ct.Labels[labelPodUID],
			State: ct.State, CreatedAt: ct.CreatedAt.time(),
		})
		if ct.State == "CONTAINER_RUNNING" && readySandbox[ct.PodSandboxID] {
			v.Running = true
		}
	}
	sort.Slice(v.Sandboxes, func(i, j int) bool { return v.Sandboxes[i].CreatedAt.Before(v.Sandboxes[j].CreatedAt) })
	sort.Slice(v.Containers, func(i, j int) bool { return v.Containers[i].CreatedAt.Before(v.Containers[j].CreatedAt) })
	return v
}

// NamespaceContainersFromCrictl picks namespace's containers out of
// `crictl ps -a -o json`.
func NamespaceContainersFromCrictl(containersJSON []byte, namespace string) (evidence.NamespaceContainersValue, error) {
	ctrs, err := parseCrictlContainers(containersJSON)
	if err != nil {
		return evidence.NamespaceContainersValue{}, err
	}
	return Crictl{ctrs: ctrs}.NamespaceContainers(namespace), nil
}

// NamespaceContainers is every container of namespace, in creation order,
// with its pod's name and UID from the kubelet's labels.
func (c Crictl) NamespaceContainers(namespace string) evidence.NamespaceContainersValue {
	v := evidence.NamespaceContainersValue{Containers: []evidence.NamespaceContainer{}}
	for _, ct := range c.ctrs.Containers {
		if ct.Labels[labelPodNamespace] != namespace {
			continue
		}
		v.Containers = append(v.Containers, evidence.NamespaceContainer{
			Pod: ct.Labels[labelPodName], PodUID: ct.Labels[labelPodUID],
			ID: ct.ID, State: ct.State, CreatedAt: ct.CreatedAt.time(),
		})
	}
	sort.Slice(v.Containers, func(i, j int) bool { return v.Containers[i].CreatedAt.Before(v.Containers[j].CreatedAt) })
	return v
}
