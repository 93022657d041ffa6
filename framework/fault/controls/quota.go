package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// ClassOperatorAction is what an operator does to a healthy cluster
// through the API (a quota, a finalizer, a deletion) with no component
// failing at all.
const ClassOperatorAction fault.Class = "operator-action"

// KindQuotaThenDelete is the kind of QuotaThenDelete faults.
const KindQuotaThenDelete = "quota-then-delete"

// FreezeQuotaName names the ResourceQuota QuotaThenDelete creates.
const FreezeQuotaName = "faultline-control-freeze"

// Deployment names a Deployment.
type Deployment struct {
	Namespace string `json:"namespace"`
	Name      string `json:"deployment"`
	// Wait bounds the wait for the quota controller to count the
	// namespace, and for the Deployment to have a ready pod to delete.
	Wait time.Duration `json:"wait"`
}

// QuotaThenDelete freezes d's namespace with a ResourceQuota of zero pods,
// as an operator stopping a namespace from growing would, and then
// deletes one ready pod of d gracefully. The ReplicaSet controller's
// replacement is refused by the quota admission, so the Deployment stays
// one ready replica short for as long as the quota lasts, with every
// component healthy: replicas-restored must be judged VIOLATED.
//
// The quota outlives Heal (which does nothing): it is the breakage
// replicas-restored is judged on after heal. Release deletes it, once the
// verdicts are in; the ReplicaSet controller then creates the replacement.
func QuotaThenDelete(d Deployment) fault.Lingering { return &quotaDelete{p: d} }

type quotaDelete struct{ p Deployment }

func (f *quotaDelete) Kind() string            { return KindQuotaThenDelete }
func (f *quotaDelete) Class() fault.Class      { return ClassOperatorAction }
func (f *quotaDelete) Params() json.RawMessage { return mustJSON(KindQuotaThenDelete, f.p) }

// Inject refuses, before creating anything, when the Deployment is not
// there or a quota of the same name already is (someone else's, which
// Release would delete).
func (f *quotaDelete) Inject(ctx context.Context, l lab.Lab) error {
	p := f.p
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("quota: %w", err)
	}
	d, err := cs.AppsV1().Deployments(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("quota: reading deployment %s/%s: %w", p.Namespace, p.Name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("quota: deployment %s/%s's selector: %w", p.Namespace, p.Name, err)
	}
	quotas := cs.CoreV1().ResourceQuotas(p.Namespace)
	if _, err := quotas.Get(ctx, FreezeQuotaName, metav1.GetOptions{}); err == nil {
		return fmt.Errorf("quota: %s/%s already exists; faultline heal releases one a run left behind", p.Namespace, FreezeQuotaName)
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("quota: reading quota %s/%s: %w", p.Namespace, FreezeQuotaName, err)
	}
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: FreezeQuotaName, Namespace: p.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "faultline"}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	if _, err := quotas.Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("quota: creating %s/%s: %w", p.Namespace, FreezeQuotaName, err)
	}
	crashpoint.Reach("quota-then-delete/inject/quota")
	// Until the quota controller has counted the namespace the admission
	// refuses every pod anyway ("status unknown"); waiting for the count
	// makes the refusal the quota's own, as on any cluster.
	counted := func(ctx context.Context) (bool, error) {
		q, err := quotas.Get(ctx, FreezeQuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, hard := q.Status.Hard[corev1.ResourcePods]
		_, used := q.Status.Used[corev1.ResourcePods]
		return hard && used, nil
	}
	if err := lab.WaitFor(ctx, "the quota controller to count "+p.Namespace, p.Wait, time.Second, counted); err != nil {
		return fmt.Errorf("quota: %w", err)
	}
	var victim *corev1.Pod
	ready := func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return false, err
		}
		items := pods.Items
		sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
		for i := range items {
			if items[i].DeletionTimestamp == nil && podReady(&items[i]) {
				victim = &items[i]
				return true, nil
			}
		}
		return false, nil
	}
	if err := lab.WaitFor(ctx, "a ready pod of deployment "+p.Namespace+"/"+p.Name, p.Wait, time.Second, ready); err != nil {
		return fmt.Errorf("quota: %w", err)
	}
	err = cs.CoreV1().Pods(p.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}})
	if err != nil {
		return fmt.Errorf("quota: deleting pod %s/%s: %w", p.Namespace, victim.Name, err)
	}
	return nil
}

// Heal does nothing: the quota is what replicas-restored is judged on
// after heal, and Release removes it.
func (f *quotaDelete) Heal(context.Context, lab.Lab) error { return nil }

// Release deletes the quota; one already gone is released.
func (f *quotaDelete) Release(ctx context.Context, l lab.Lab) error {
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("quota: %w", err)
	}
	err = cs.CoreV1().ResourceQuotas(f.p.Namespace).Delete(ctx, FreezeQuotaName, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("quota: deleting %s/%s: %w", f.p.Namespace, FreezeQuotaName, err)
	}
	fault.Found(ctx, "ResourceQuota %s/%s", f.p.Namespace, FreezeQuotaName)
	fault.Removed(ctx, "ResourceQuota %s/%s", f.p.Namespace, FreezeQuotaName)
	return nil
}

// Probe sees the fault when the quota is there and the Deployment has
// fewer ready replicas than its spec.
func (f *quotaDelete) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	p := f.p
	cs, err := client(l, "")
	if err != nil {
		return fault.Effect{}, err
	}
	q, err := cs.CoreV1().ResourceQuotas(p.Namespace).Get(ctx, FreezeQuotaName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fault.Effect{Detail: fmt.Sprintf("no quota %s/%s", p.Namespace, FreezeQuotaName)}, nil
	}
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading quota %s/%s: %w", p.Namespace, FreezeQuotaName, err)
	}
	d, err := cs.AppsV1().Deployments(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading deployment %s/%s: %w", p.Namespace, p.Name, err)
	}
	spec := int32(1)
	if d.Spec.Replicas != nil {
		spec = *d.Spec.Replicas
	}
	used := q.Status.Used[corev1.ResourcePods]
	detail := fmt.Sprintf("quota %s/%s holds pods at %s (used %s); deployment %s has %d of %d replicas ready",
		p.Namespace, FreezeQuotaName, q.Spec.Hard.Pods(), used.String(), p.Name, d.Status.ReadyReplicas, spec)
	return fault.Effect{Observed: d.Status.ReadyReplicas < spec, Detail: detail}, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func decodeQuotaDelete(raw json.RawMessage) (fault.Fault, error) {
	var p Deployment
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Namespace == "" || p.Name == "" {
		return nil, errors.New("namespace and deployment are both needed")
	}
	return &quotaDelete{p: p}, nil
}

func init() { fault.Register(KindQuotaThenDelete, decodeQuotaDelete) }
