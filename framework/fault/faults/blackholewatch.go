package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindBlackholeWatch is the kind of BlackholeWatch faults.
const KindBlackholeWatch = "blackhole-watch"

// ClassAsymmetric is an agent whose requests go through while what it
// needs to hear does not.
const ClassAsymmetric fault.Class = "asymmetric"

type blackholeWatchParams struct {
	// Node is the host whose kubelet stops receiving pod updates; its
	// Node object must carry the host's name.
	Node string `json:"node"`
	Tag  string `json:"tag"`
}

func (p blackholeWatchParams) check() error {
	var errs []error
	if p.Node == "" {
		errs = append(errs, errors.New("no node named"))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// BlackholeWatch lets node's kubelet send its status but not receive pod
// updates.
//
// Kubelet's pod watch and its status updates may share one HTTP/2
// connection, so no packet filter can cut one and not the other. The cut is
// made where the requests are told apart, in the API servers' API Priority
// and Fairness: a FlowSchema (matching precedence 10, ahead of every
// built-in one but exempt) sends the kubelet's list and watch of pods to a
// priority level with no seats that rejects them (HTTP 429). Kubelet's node
// status, lease, pod GETs and pod status updates are not matched and go
// through. A watch opened before the fault is not subject to APF any more,
// so inject also resets the host's established connections to the API
// server port (ss -K), making kubelet list again; that also makes kube-proxy
// and any other client on the host reconnect, once.
//
// What it cuts, precisely: new pods bound to the node, deletions and
// spec changes of its pods, never reach kubelet while the fault holds;
// everything kubelet sends reaches the API servers. The kubelet sees
// refusals, not silence.
func BlackholeWatch(node string) fault.Fault {
	return &blackholeWatch{p: blackholeWatchParams{Node: node, Tag: newTag()}}
}

type blackholeWatch struct{ p blackholeWatchParams }

func (f *blackholeWatch) Kind() string            { return KindBlackholeWatch }
func (f *blackholeWatch) Class() fault.Class      { return ClassAsymmetric }
func (f *blackholeWatch) Params() json.RawMessage { return mustJSON(f.p) }
func (f *blackholeWatch) objectName() string      { return "faultline-blackhole-watch-" + f.p.Tag }

// apfObjects are the priority level and flow schema of one fault.
func apfObjects(name, node string) (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	labels := map[string]string{"app.kubernetes.io/managed-by": "faultline"}
	plc := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence:         10,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{
					Kind: flowcontrolv1.SubjectKindUser,
					User: &flowcontrolv1.UserSubject{Name: "system:node:" + node},
				}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs:        []string{"list", "watch"},
					APIGroups:    []string{""},
					Resources:    []string{"pods"},
					ClusterScope: true,
					Namespaces:   []string{flowcontrolv1.NamespaceEvery},
				}},
			}},
		},
	}
	return plc, fs
}

func (f *blackholeWatch) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("blackhole watch: %w", err)
	}
	h, err := hostByName(l, f.p.Node)
	if err != nil {
		return fmt.Errorf("blackhole watch: %w", err)
	}
	if !h.HasRole(lab.RoleWorker) && !h.HasRole(lab.RoleControlPlane) {
		return fmt.Errorf("blackhole watch: %s runs no kubelet (roles %v)", h.Name(), h.Roles())
	}
	cs, err := kubeClient(l)
	if err != nil {
		return fmt.Errorf("blackhole watch: %w", err)
	}
	plc, fs := apfObjects(f.objectName(), f.p.Node)
	if _, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, plc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("blackhole watch: creating PriorityLevelConfiguration %s: %w", plc.Name, err)
	}
	if _, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("blackhole watch: creating FlowSchema %s: %w", fs.Name, err)
	}
	port := l.Config().Network.APIServerPort
	if _, err := run(ctx, h, resetConnectionsScript(port)); err != nil {
		return fmt.Errorf("blackhole watch: resetting %s's connections to API servers: %w", h.Name(), err)
	}
	return nil
}

func resetConnectionsScript(port int) string {
	return fmt.Sprintf("ss -K -tn state established '( dport = :%d )' >/dev/null", port)
}

func (f *blackholeWatch) Heal(ctx context.Context, l lab.Lab) error {
	cs, err := kubeClient(l)
	if err != nil {
		return fmt.Errorf("healing blackhole watch: %w", err)
	}
	name := f.objectName()
	if err := cs.FlowcontrolV1().FlowSchemas().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("healing blackhole watch: deleting FlowSchema %s: %w", name, err)
	}
	if err := cs.FlowcontrolV1().PriorityLevelConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("healing blackhole watch: deleting PriorityLevelConfiguration %s: %w", name, err)
	}
	return nil
}

// Probe reads, from every API server's /metrics, how many requests the
// fault's flow schema rejected: each one is a list or watch of pods by the
// node's kubelet that the API server refused.
func (f *blackholeWatch) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	var total float64
	var seen []string
	for _, cp := range lab.HostsWithRole(l, lab.RoleControlPlane) {
		body, err := apiServerMetrics(ctx, l, cp.Name())
		if err != nil {
			return fault.Effect{}, err
		}
		n := sumMetric(body, "apiserver_flowcontrol_rejected_requests_total", `flow_schema="`+f.objectName()+`"`)
		total += n
		seen = append(seen, fmt.Sprintf("%s: %g", cp.Name(), n))
	}
	return fault.Effect{Observed: total > 0, Detail: fmt.Sprintf("API servers rejected %g pod list/watch requests of kubelet %s (%s)", total, f.p.Node, strings.Join(seen, ", "))}, nil
}

func apiServerMetrics(ctx context.Context, l lab.Lab, host string) (string, error) {
	path, err := l.Kubeconfig(host)
	if err != nil {
		return "", fmt.Errorf("kubeconfig for the API server on %s: %w", host, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return "", fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("reading /metrics of the API server on %s: %w", host, err)
	}
	return string(body), nil
}

// sumMetric adds up the samples of a Prometheus text-format metric whose
// labels contain label.
func sumMetric(body, name, label string) float64 {
	var total float64
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, label) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			total += v
		}
	}
	return total
}

func init() {
	register(KindBlackholeWatch, func(p blackholeWatchParams) fault.Fault { return &blackholeWatch{p: p} })
}
