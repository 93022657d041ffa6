package source

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
)

// The test Deployment of the fixtures (fixtures/manifests/20-web.yaml),
// whose replicas replicas-restored follows.
const (
	DeploymentNamespace = "faultline"
	DeploymentName      = "web"
)

// The leader-election Leases of the control plane's controllers; both
// components name their Lease after themselves, in kube-system.
const (
	leaderLeaseNamespace      = "kube-system"
	controllerManagerLeaseKey = "kube-controller-manager"
	schedulerLeaseKey         = "kube-scheduler"
)

// ControlObjects reads, through one API server, the objects that say how
// the control plane itself is doing: the two leader-election Leases and the
// test Deployment's replica counts. It answers under the API server's own
// source name, combined with that server's APIServer reader (see Combine),
// so every invariant reading "apiserver/*" finds them there.
type ControlObjects struct {
	name       evidence.Source
	client     kubernetes.Interface
	deployment [2]string // namespace, name
}

// NewControlObjects makes the reader for the server client talks to, named
// name ("apiserver/cp1"). An empty deployment namespace or name means the
// fixtures' Deployment.
func NewControlObjects(name evidence.Source, client kubernetes.Interface, deploymentNamespace, deploymentName string) *ControlObjects {
	if deploymentNamespace == "" {
		deploymentNamespace = DeploymentNamespace
	}
	if deploymentName == "" {
		deploymentName = DeploymentName
	}
	return &ControlObjects{name: name, client: client, deployment: [2]string{deploymentNamespace, deploymentName}}
}

func (c *ControlObjects) Source() evidence.Source { return c.name }

func (c *ControlObjects) Questions() []evidence.Question {
	return []evidence.Question{evidence.ControllerManagerLease, evidence.SchedulerLease, evidence.DeploymentReplicas}
}

// Read issues its three requests at once.
func (c *ControlObjects) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	var mu sync.Mutex
	set := func(q evidence.Question, a evidence.Answer) {
		mu.Lock()
		out[q] = a
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for q, key := range map[evidence.Question]string{
		evidence.ControllerManagerLease: controllerManagerLeaseKey,
		evidence.SchedulerLease:         schedulerLeaseKey,
	} {
		wg.Go(func() {
			l, err := c.client.CoordinationV1().Leases(leaderLeaseNamespace).Get(ctx, key, metav1.GetOptions{})
			set(q, objectAnswer(l, err, LeaseOf, func(l *coordinationv1.Lease) string { return l.ResourceVersion }))
		})
	}
	wg.Go(func() {
		d, err := c.client.AppsV1().Deployments(c.deployment[0]).Get(ctx, c.deployment[1], metav1.GetOptions{})
		set(evidence.DeploymentReplicas, objectAnswer(d, err, DeploymentOf, func(d *appsv1.Deployment) string { return d.ResourceVersion }))
	})
	wg.Wait()
	return out
}

// DeploymentOf returns a Deployment's replica counts; spec.replicas left
// out means one, as the API server defaults it.
func DeploymentOf(d *appsv1.Deployment) evidence.DeploymentValue {
	if d == nil {
		return evidence.DeploymentValue{}
	}
	v := evidence.DeploymentValue{
		Exists:             true,
		Generation:         d.Generation,
		ObservedGeneration: d.Status.ObservedGeneration,
		Replicas:           1,
		ReadyReplicas:      d.Status.ReadyReplicas,
		AvailableReplicas:  d.Status.AvailableReplicas,
		UpdatedReplicas:    d.Status.UpdatedReplicas,
	}
	if d.Spec.Replicas != nil {
		v.Replicas = *d.Spec.Replicas
	}
	return v
}
