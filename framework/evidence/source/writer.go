package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
)

// The register writer fixture (fixtures/manifests/40-writer.yaml): a pod
// that logs every operation on its register as a JSON line on stdout.
const (
	WriterNamespace = "faultline"
	WriterSelector  = "app.kubernetes.io/name=faultline-writer"
	WriterContainer = "writer"
)

// Writer reads the register writer's history from its pods' logs through
// an API server. A history that does not start at the writer's first round,
// or skips one, is unreadable: a checker given part of a history would see
// reads of values never written and call that a violation.
type Writer struct {
	client    kubernetes.Interface
	namespace string
	selector  string
}

// NewWriter makes the "writer" source, finding the writer pods by label.
func NewWriter(client kubernetes.Interface, namespace, selector string) *Writer {
	return &Writer{client: client, namespace: namespace, selector: selector}
}

func (w *Writer) Source() evidence.Source { return "writer" }

func (w *Writer) Questions() []evidence.Question {
	return []evidence.Question{evidence.RegisterHistory}
}

func (w *Writer) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	one := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		return map[evidence.Question]evidence.Answer{evidence.RegisterHistory: a}
	}
	pods, err := w.client.CoreV1().Pods(w.namespace).List(ctx, metav1.ListOptions{LabelSelector: w.selector})
	if err != nil {
		return one(evidence.UnreadableAnswer("finding the writer: "+Reason(err), now()))
	}
	if len(pods.Items) == 0 {
		return one(evidence.UnreadableAnswer(NotDeployed(fmt.Sprintf("no pod %s in namespace %s", w.selector, w.namespace)), now()))
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp) })
	var ops []evidence.RegisterOp
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodPending {
			continue // no container has run, so there is no log yet
		}
		body, err := w.client.CoreV1().Pods(w.namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: WriterContainer}).DoRaw(ctx)
		if err != nil {
			return one(evidence.UnreadableAnswer("writer "+p.Name+" log: "+Reason(err), now()))
		}
		got, err := RegisterOpsFromLog(body)
		if err != nil {
			return one(evidence.UnreadableAnswer("error: writer "+p.Name+" log: "+err.Error(), now()))
		}
		ops = append(ops, got...)
	}
	return one(answer(evidence.RegisterHistoryValue{Ops: ops}, now(), ""))
}

// RegisterOpsFromLog decodes a writer's log: one JSON operation per line;
// lines that are not JSON objects (the Go log package's own lines) are
// skipped; a last line cut off mid-write is dropped. Every writer's rounds
// must run from 1 with no gap.
func RegisterOpsFromLog(log []byte) ([]evidence.RegisterOp, error) {
	var ops []evidence.RegisterOp
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	complete := len(log) == 0 || log[len(log)-1] == '\n'
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var op evidence.RegisterOp
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&op); err != nil {
			if i == len(lines)-1 && !complete {
				break
			}
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		ops = append(ops, op)
	}
	last := map[string]int{}
	for _, op := range ops {
		prev := last[op.Writer]
		if op.Round != prev && op.Round != prev+1 {
			if prev == 0 {
				return nil, fmt.Errorf("writer %s's history starts at round %d, not 1: the log is cut (rotated?)", op.Writer, op.Round)
			}
			return nil, fmt.Errorf("writer %s's history jumps from round %d to %d", op.Writer, prev, op.Round)
		}
		last[op.Writer] = op.Round
	}
	return ops, nil
}
