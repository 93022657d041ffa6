package controls

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// cutParams is a wrapped cut as a ledger entry holds it.
type cutParams struct {
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
}

func cutOf(f fault.Fault) cutParams { return cutParams{Kind: f.Kind(), Params: f.Params()} }

// decode is the very cut that was injected (same tag, same rules).
func (c cutParams) decode() (fault.Fault, error) {
	f, err := fault.Decode(c.Kind, c.Params)
	if err != nil {
		return nil, fmt.Errorf("the cut: %w", err)
	}
	return f, nil
}

// cutContext prefixes what the cut's heal notes in the heal's account.
func cutContext(ctx context.Context, cut fault.Fault) context.Context {
	return fault.Within(ctx, "the cut ("+cut.Kind()+"): ")
}

// client is a client of the API server of observer ("" for the lab's
// default address, the virtual one where there is one). Tests replace it
// with a fake clientset.
var client = KubeClient

// KubeClient is a client of the API server of observer ("" for the lab's
// default address), through the lab's kubeconfig for it.
func KubeClient(l lab.Lab, observer string) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig(observer)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig for %q: %w", observer, err)
	}
	cs, _, err := source.ClientFromKubeconfig(path, 5*time.Second)
	return cs, err
}

func mustJSON(kind string, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("%s params: %v", kind, err))
	}
	return b
}
