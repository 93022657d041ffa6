package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/apiretry"
)

// The elector fixture: two replicas of the leader-elected writer
// (fixtures/electorlog), each a Deployment of one pod pinned to its node,
// taking part in one leader election over the Lease Elector and
// incrementing a counter in the external store while they lead.
const (
	Elector = "elector"
	// ElectorA and ElectorB are the replicas' Deployments (and their
	// pods' app label).
	ElectorA = "elector-a"
	ElectorB = "elector-b"
	// ElectorNodeA and ElectorNodeB are where they run (required: nothing
	// needs them to move, and the scenarios name each by its node).
	ElectorNodeA = "worker1"
	ElectorNodeB = "worker2"
	// ElectorDataPrefix is where the leaders' counters and the fencing
	// token are in the external store, ElectorHistoryPrefix where the
	// replicas keep their histories.
	ElectorDataPrefix    = "/faultline/splitbrain/elector/data/"
	ElectorHistoryPrefix = "/faultline/splitbrain/elector/history/"

	// The leader election's timers, short for the fast profile: a
	// non-leader takes the Lease ElectorLeaseDuration after the last
	// renewal it saw (trying every ElectorRetryPeriod), and a leader
	// whose renewals have failed for ElectorRenewDeadline stops leading.
	ElectorLeaseDuration = 6 * time.Second
	ElectorRenewDeadline = 4 * time.Second
	ElectorRetryPeriod   = time.Second
	// ElectorInterval is the time between two operations' starts.
	ElectorInterval = 100 * time.Millisecond
)

// The labels the elector reads from its scenario.
const (
	// LabelFencing prefixes the fencing mode the replicas run with:
	// fencing:none or fencing:lease-transitions (required).
	LabelFencing = "fencing:"
	// LabelAPIServerA and LabelAPIServerB prefix the control-plane host
	// whose API server alone a replica talks to (apiserver-b:cp3);
	// without one the replica uses its service account's, the kubernetes
	// Service, which spreads connections over every API server.
	LabelAPIServerA = "apiserver-a:"
	LabelAPIServerB = "apiserver-b:"
)

// ElectorSource is the source of the elector's evidence, the name the
// invariants read elector/history from.
const ElectorSource evidence.Source = "elector"

// ElectorConfig is what the elector's objects are made from.
type ElectorConfig struct {
	// Fencing is electorlog.FencingNone or FencingLeaseTransitions.
	Fencing string
	// Endpoints are the external store's, for the counters and the
	// histories both.
	Endpoints []string
	// ServerA and ServerB are the API server URLs replica a and b use
	// (--server); empty: the service account's.
	ServerA, ServerB string
}

// ElectorConfigOf reads the elector's configuration from a scenario's
// labels: the fencing mode, and the API server each replica is pinned to
// (a control-plane host of the lab cfg, at its address and the lab's API
// server port).
func ElectorConfigOf(labels []string, cfg *lab.Config, info lab.StorageInfo) (ElectorConfig, error) {
	c := ElectorConfig{Endpoints: info.HistoryEndpoints}
	var errs []error
	var fencings []string
	for _, label := range labels {
		if v, ok := strings.CutPrefix(label, LabelFencing); ok {
			fencings = append(fencings, v)
		}
	}
	switch {
	case len(fencings) != 1:
		errs = append(errs, fmt.Errorf("the elector needs one %s label (%s%s or %s%s), the scenario has %d", LabelFencing, LabelFencing, electorlog.FencingNone, LabelFencing, electorlog.FencingLeaseTransitions, len(fencings)))
	case fencings[0] != electorlog.FencingNone && fencings[0] != electorlog.FencingLeaseTransitions:
		errs = append(errs, fmt.Errorf("label %s%s: the fencing is %s or %s", LabelFencing, fencings[0], electorlog.FencingNone, electorlog.FencingLeaseTransitions))
	default:
		c.Fencing = fencings[0]
	}
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("the lab's storage names no external store for the elector"))
	}
	for _, pin := range []struct {
		prefix string
		server *string
	}{{LabelAPIServerA, &c.ServerA}, {LabelAPIServerB, &c.ServerB}} {
		for _, label := range labels {
			host, ok := strings.CutPrefix(label, pin.prefix)
			if !ok {
				continue
			}
			if *pin.server != "" {
				errs = append(errs, fmt.Errorf("more than one %s label", pin.prefix))
				continue
			}
			u, err := apiServerURL(cfg, host)
			if err != nil {
				errs = append(errs, fmt.Errorf("label %s: %w", label, err))
				continue
			}
			*pin.server = u
		}
	}
	return c, errors.Join(errs...)
}

// apiServerURL is the URL of host's own API server.
func apiServerURL(cfg *lab.Config, host string) (string, error) {
	if cfg == nil {
		return "", errors.New("no lab to find the host in")
	}
	hc, ok := cfg.HostConfig(host)
	if !ok {
		return "", fmt.Errorf("lab %s has no host %q", cfg.Name, host)
	}
	if !slices.Contains(hc.Roles, lab.RoleControlPlane) || hc.Address == "" {
		return "", fmt.Errorf("host %s runs no API server (roles %v)", host, hc.Roles)
	}
	port := cfg.Network.APIServerPort
	if port == 0 {
		port = 6443
	}
	return "https://" + net.JoinHostPort(hc.Address, strconv.Itoa(port)), nil
}

// ElectorArgs are the elector's arguments for one replica, server its
// --server (empty: none).
func ElectorArgs(c ElectorConfig, server string) []string {
	endpoints := strings.Join(c.Endpoints, ",")
	args := []string{
		"--fencing=" + c.Fencing,
		"--store-endpoints=" + endpoints, "--store-prefix=" + ElectorDataPrefix,
		"--history-endpoints=" + endpoints, "--history-prefix=" + ElectorHistoryPrefix,
		"--lease-name=" + Elector,
		"--lease-duration=" + ElectorLeaseDuration.String(),
		"--renew-deadline=" + ElectorRenewDeadline.String(),
		"--retry-period=" + ElectorRetryPeriod.String(),
		"--interval=" + ElectorInterval.String(),
	}
	if server != "" {
		args = append(args, "--server="+server)
	}
	return args
}

// ElectorDeployments are the two replicas: ElectorA on ElectorNodeA with
// c.ServerA, ElectorB on ElectorNodeB with c.ServerB.
func ElectorDeployments(c ElectorConfig) []*appsv1.Deployment {
	return []*appsv1.Deployment{
		electorDeployment(ElectorA, ElectorNodeA, ElectorArgs(c, c.ServerA)),
		electorDeployment(ElectorB, ElectorNodeB, ElectorArgs(c, c.ServerB)),
	}
}

func electorDeployment(name, node string, args []string) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": name, "workload": Elector}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			// Never two pods of one replica, not even during a rollout.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: Elector,
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
						}}},
					}},
					// As the ledger's: a taint manager that takes the node
					// for lost (the controller-manager of an API server on a
					// forked etcd, whose copy no kubelet renews) does not
					// evict the replica there: its service account token is
					// bound to the pod, and that API server would refuse it
					// once the pod is gone from its copy.
					Tolerations: lostNodeTolerations(),
					Containers: []corev1.Container{{
						Name:  Elector,
						Image: images.Ref(Elector),
						Args:  args,
						Env: identityEnv(corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}),
						// Readiness only: a liveness probe would have the
						// kubelet restart a frozen leader, which the
						// scenarios freeze on purpose.
						ReadinessProbe: readyzProbe(),
					}},
				},
			},
		},
	}
}

// ElectorRBAC are the replicas' ServiceAccount and the Role and
// RoleBinding that let it get, create and update Leases in the namespace.
func ElectorRBAC() (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	meta := metav1.ObjectMeta{Name: Elector, Namespace: Namespace}
	return &corev1.ServiceAccount{ObjectMeta: meta},
		&rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: meta,
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Elector, Namespace: Namespace}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: Elector},
		}
}

// installElector creates the namespace, the RBAC and both replicas, and
// waits until each has a ready pod on its node and the Lease has a holder.
func installElector(ctx context.Context, cs kubernetes.Interface, in Install) error {
	var cfg *lab.Config
	if in.Lab != nil {
		cfg = in.Lab.Config()
	}
	c, err := ElectorConfigOf(in.Labels, cfg, in.Info)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, in.Timeout)
	defer cancel()
	if err := EnsureNamespace(ctx, cs); err != nil {
		return err
	}
	sa, role, binding := ElectorRBAC()
	// A create the API server dropped is asked again (apiretry.Create):
	// a connection through the virtual address is reset when keepalived
	// moves it.
	create := func(what string, do func() error) error {
		if err := apiretry.Create(ctx, do); err != nil {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
	if err := create("serviceaccount "+sa.Name, func() error {
		_, err := cs.CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := create("role "+role.Name, func() error {
		_, err := cs.RbacV1().Roles(Namespace).Create(ctx, role, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := create("rolebinding "+binding.Name, func() error {
		_, err := cs.RbacV1().RoleBindings(Namespace).Create(ctx, binding, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	deps := ElectorDeployments(c)
	for _, d := range deps {
		if err := create("deployment "+d.Name, func() error {
			_, err := cs.AppsV1().Deployments(Namespace).Create(ctx, d, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	nodes := map[string]string{ElectorA: ElectorNodeA, ElectorB: ElectorNodeB}
	var last string
	for {
		last = electorNotReady(ctx, cs, nodes)
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the elector: %s (%w)", last, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// electorNotReady says what the elector still lacks: a ready pod of each
// replica on its node, and a holder of the Lease; empty when it lacks
// nothing.
func electorNotReady(ctx context.Context, cs kubernetes.Interface, nodes map[string]string) string {
	for _, app := range []string{ElectorA, ElectorB} {
		pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return fmt.Sprintf("listing %s's pods: %v", app, err)
		}
		ready := false
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && p.Spec.NodeName == nodes[app] && podReady(p) {
				ready = true
			}
		}
		if !ready {
			return fmt.Sprintf("%s has no ready pod on %s (%d pods)", app, nodes[app], len(pods.Items))
		}
	}
	lease, err := cs.CoordinationV1().Leases(Namespace).Get(ctx, Elector, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("reading Lease %s/%s: %v", Namespace, Elector, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return fmt.Sprintf("Lease %s/%s has no holder", Namespace, Elector)
	}
	return ""
}

// electorExtra is the elector's evidence: every replica's history in the
// external store.
func electorExtra() sampler.Extra {
	return sampler.Extra{Name: string(ElectorSource), Open: func(env sampler.Env) (sampler.Parts, error) {
		sd, ok := env.Lab.(lab.StoredData)
		if !ok {
			return sampler.Parts{}, fmt.Errorf("the %s evidence: lab %s offers no storage (lab.StoredData)", ElectorSource, env.Lab.Config().Name)
		}
		info, err := sd.StorageInfo()
		if err != nil {
			return sampler.Parts{}, fmt.Errorf("the %s evidence: %w", ElectorSource, err)
		}
		store, err := clientv3.New(clientv3.Config{Endpoints: info.HistoryEndpoints, DialTimeout: 2 * time.Second})
		if err != nil {
			return sampler.Parts{}, fmt.Errorf("the %s evidence: the external store at %v: %w", ElectorSource, info.HistoryEndpoints, err)
		}
		return sampler.Parts{Readers: []evidence.Reader{&electorReader{use: useOf(env.Run.Labels), store: store}}}, nil
	}}
}

// electorReader reads the replicas' histories in one linearizable read.
type electorReader struct {
	// use is what the run the reader was opened for uses.
	use   runUse
	store clientv3.KV
}

func (r *electorReader) Source() evidence.Source { return ElectorSource }

// Questions are the elector's when the reader's run runs it, none
// otherwise.
func (r *electorReader) Questions() []evidence.Question {
	if !r.use.runs(WorkloadElector) {
		return nil
	}
	return []evidence.Question{storeddata.ElectorHistory}
}

func (r *electorReader) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	asked := time.Now().UTC()
	kvs, rev, err := history.ReadKVs(ctx, r.store, ElectorHistoryPrefix, "the elector history")
	if err != nil {
		return map[evidence.Question]evidence.Answer{storeddata.ElectorHistory: evidence.UnreadableAnswer(err.Error(), time.Now().UTC())}
	}
	// The raw keys, decoded by the invariants with the workload's own
	// code.
	v := storeddata.ElectorHistoryValue{Prefix: ElectorHistoryPrefix, Revision: rev, KVs: storedKVs(kvs)}
	a := evidence.EncodedAnswer(v, time.Now().UTC(), strconv.FormatInt(rev, 10))
	a.AskedAt = asked
	return map[evidence.Question]evidence.Answer{storeddata.ElectorHistory: a}
}
