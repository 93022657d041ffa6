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
}

// NewRuntime makes a reader named "cri/<host>".
func NewRuntime(host lab.Host, subjects evidence.Subjects) *Runtime {
	return &Runtime{name: evidence.Source("cri/" + host.Name()), host: host, subjects: subjects}
}

func (r *Runtime) Source() evidence.Source { return r.name }

func (r *Runtime) Questions() []evidence.Question {
	return []evidence.Question{evidence.PodRunningHere}
}

func (r *Runtime) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	res, err := r.host.Run(ctx, crictlCommand)
	at := now()
	if err != nil {
		return map[evidence.Question]evidence.Answer{evidence.PodRunningHere: evidence.UnreadableAnswer(Reason(err), at)}
	}
	if res.ExitCode != 0 {
		why := fmt.Sprintf("error: crictl on %s exited %d: %s", r.host.Name(), res.ExitCode, firstLine([]byte(res.Stderr)))
		return map[evidence.Question]evidence.Answer{evidence.PodRunningHere: evidence.UnreadableAnswer(why, at)}
	}
	pods, containers, ok := strings.Cut(res.Stdout, crictlSeparator)
	if !ok {
		return map[evidence.Question]evidence.Answer{evidence.PodRunningHere: evidence.UnreadableAnswer("error: crictl output lacks its separator", at)}
	}
	v, err := RuntimePodFromCrictl([]byte(pods), []byte(containers), r.subjects.PodNamespace, r.subjects.PodName)
	if err != nil {
		return map[evidence.Question]evidence.Answer{evidence.PodRunningHere: evidence.UnreadableAnswer("error: "+err.Error(), at)}
	}
	return map[evidence.Question]evidence.Answer{evidence.PodRunningHere: answer(v, at, "")}
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

// RuntimePodFromCrictl picks the pod's sandboxes and containers out of
// `crictl pods -o json` and `crictl ps -a -o json`. Running means a ready
// sandbox of the pod with a running container in it.
func RuntimePodFromCrictl(podsJSON, containersJSON []byte, namespace, name string) (evidence.RuntimePodValue, error) {
	var pods crictlPods
	if err := json.Unmarshal(podsJSON, &pods); err != nil {
		return evidence.RuntimePodValue{}, fmt.Errorf("decoding crictl pods: %w", err)
	}
	var ctrs crictlContainers
	if err := json.Unmarshal(containersJSON, &ctrs); err != nil {
		return evidence.RuntimePodValue{}, fmt.Errorf("decoding crictl ps: %w", err)
	}
	v := evidence.RuntimePodValue{Sandboxes: []evidence.RuntimeSandbox{}, Containers: []evidence.RuntimeContainer{}}
	readySandbox := map[string]bool{}
	for _, p := range pods.Items {
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
	for _, c := range ctrs.Containers {
		if c.Labels[labelPodNamespace] != namespace || c.Labels[labelPodName] != name {
			continue
		}
		v.Containers = append(v.Containers, evidence.RuntimeContainer{
			ID: c.ID, Name: c.Metadata.Name, SandboxID: c.PodSandboxID, PodUID: c.Labels[labelPodUID],
			State: c.State, CreatedAt: c.CreatedAt.time(),
		})
		if c.State == "CONTAINER_RUNNING" && readySandbox[c.PodSandboxID] {
			v.Running = true
		}
	}
	sort.Slice(v.Sandboxes, func(i, j int) bool { return v.Sandboxes[i].CreatedAt.Before(v.Sandboxes[j].CreatedAt) })
	sort.Slice(v.Containers, func(i, j int) bool { return v.Containers[i].CreatedAt.Before(v.Containers[j].CreatedAt) })
	return v, nil
}
