// Package drills holds the drills users run by hand, as scenarios: a
// worker's power pulled against its kubelet stopped (6.C1 against its
// control 6.C2, topology pair), and rack R1 cut off from etcd and R2 while
// its control plane holds the leader leases (topology racks). The Ginkgo
// suite is drills_test.go; the reports come from suites/drills/report.
package drills

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/cleanup"
)

// Names of what the drills create, as the drill's own commands name them.
const (
	Namespace      = "c1"
	DeploymentName = "web"
	OrphanName     = "orphan"
	// StatefulSetName is the racks drill's P: its pod P1 is p-0.
	StatefulSetName = "p"
	StatefulPodName = "p-0"
	// RackTwoPodName is the bare pod on W2 in the racks drill.
	RackTwoPodName = "p2"

	netexecImage = "faultline.local/netexec:1.0"
	pauseImage   = "faultline.local/pause:1.0"
	appLabel     = "app.kubernetes.io/name"
)

// PairShape is the pair drill's hosts: the worker whose power is pulled and
// the control plane that watches.
type PairShape struct {
	Worker       string
	ControlPlane string
}

// PairShapeOf checks that l has the pair shape (one worker, one control
// plane) and names its hosts.
func PairShapeOf(l lab.Lab) (PairShape, error) {
	workers := lab.HostsWithRole(l, lab.RoleWorker)
	cps := lab.HostsWithRole(l, lab.RoleControlPlane)
	if len(workers) != 1 || len(cps) != 1 {
		return PairShape{}, fmt.Errorf("the pair drill needs a lab of one control-plane host and one worker (topology pair); lab %s has %d control-plane hosts and %d workers",
			l.Info().Name, len(cps), len(workers))
	}
	return PairShape{Worker: workers[0].Name(), ControlPlane: cps[0].Name()}, nil
}

// RacksShape is the racks drill's hosts: M1, W1 on rack r1; M2, W2 on r2.
type RacksShape struct {
	M1, W1, M2, W2 string
}

// RacksShapeOf checks that l has the racks shape: racks r1 and r2 holding
// one control-plane host and one worker each, and etcd on hosts of its own.
func RacksShapeOf(l lab.Lab) (RacksShape, error) {
	c := l.Config()
	if c == nil {
		return RacksShape{}, fmt.Errorf("lab %s has no config to read its racks from", l.Info().Name)
	}
	var s RacksShape
	set := func(dst *string, h lab.HostConfig) error {
		if *dst != "" {
			return fmt.Errorf("rack %s has two hosts of one role (%s, %s)", h.Rack, *dst, h.Name)
		}
		*dst = h.Name
		return nil
	}
	for _, h := range c.Hosts {
		var err error
		cp, worker := hasRole(h, lab.RoleControlPlane), hasRole(h, lab.RoleWorker)
		switch {
		case h.Rack == "r1" && cp:
			err = set(&s.M1, h)
		case h.Rack == "r1" && worker:
			err = set(&s.W1, h)
		case h.Rack == "r2" && cp:
			err = set(&s.M2, h)
		case h.Rack == "r2" && worker:
			err = set(&s.W2, h)
		case hasRole(h, lab.RoleEtcd) && h.Rack != "":
			err = fmt.Errorf("etcd host %s is on rack %s; the racks drill needs etcd outside both racks", h.Name, h.Rack)
		}
		if err != nil {
			return RacksShape{}, fmt.Errorf("lab %s: %w", c.Name, err)
		}
	}
	if s.M1 == "" || s.W1 == "" || s.M2 == "" || s.W2 == "" {
		return RacksShape{}, fmt.Errorf("the racks drill needs racks r1 and r2 with a control-plane host and a worker each (topology racks); lab %s has M1=%q W1=%q M2=%q W2=%q",
			c.Name, s.M1, s.W1, s.M2, s.W2)
	}
	return s, nil
}

func hasRole(h lab.HostConfig, r lab.Role) bool {
	for _, x := range h.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// PairObjects are the pair drill's workload as the drill creates it by
// hand: a Deployment of two netexec replicas pinned to the worker by
// nodeSelector, and a bare pod pinned by nodeName.
func PairObjects(worker string) (*corev1.Namespace, []*appsv1.Deployment, []*appsv1.StatefulSet, []*corev1.Pod) {
	dep := deployment(DeploymentName, 2)
	dep.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: worker}
	orphan := barePod(OrphanName)
	orphan.Spec.NodeName = worker
	return namespace(), []*appsv1.Deployment{dep}, nil, []*corev1.Pod{orphan}
}

// RacksObjects are the racks drill's workload: the StatefulSet P whose pod
// P1 prefers W1 (so a replacement may go to W2), a one-replica Deployment
// preferring W1, and a bare pod P2 on W2.
func RacksObjects(s RacksShape) (*corev1.Namespace, []*appsv1.Deployment, []*appsv1.StatefulSet, []*corev1.Pod) {
	dep := deployment(DeploymentName, 1)
	dep.Spec.Template.Spec.Affinity = prefer(s.W1)
	one := int32(1)
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: StatefulSetName, Namespace: Namespace},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &one,
			ServiceName: StatefulSetName,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: StatefulSetName}},
			Template:    podTemplate(StatefulSetName, netexecContainer()),
		},
	}
	sts.Spec.Template.Spec.Affinity = prefer(s.W1)
	p2 := barePod(RackTwoPodName)
	p2.Spec.NodeName = s.W2
	return namespace(), []*appsv1.Deployment{dep}, []*appsv1.StatefulSet{sts}, []*corev1.Pod{p2}
}

func namespace() *corev1.Namespace { return cleanup.OwnedNamespace(Namespace) }

func netexecContainer() corev1.Container {
	return corev1.Container{
		Name: "netexec", Image: netexecImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Args:  []string{"--port=8080"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 2, FailureThreshold: 2,
		},
	}
}

func podTemplate(app string, c corev1.Container) corev1.PodTemplateSpec {
	grace := int64(10)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appLabel: app}},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{c}},
	}
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template: podTemplate(name, netexecContainer()),
		},
	}
}

func barePod(name string) *corev1.Pod {
	grace := int64(10)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{appLabel: name}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{
			Name: "pause", Image: pauseImage, ImagePullPolicy: corev1.PullIfNotPresent,
		}}},
	}
}

func prefer(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
			}}},
		}},
	}}
}

// Install creates the workload and waits until every replica is ready and
// every bare pod runs where it was put.
func Install(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, deps []*appsv1.Deployment, sets []*appsv1.StatefulSet, pods []*corev1.Pod, timeout time.Duration) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	// A pod is refused until the namespace's default ServiceAccount exists,
	// which its controller creates shortly after the namespace.
	saReady := func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	if err := lab.WaitFor(ctx, "the default ServiceAccount of namespace "+ns.Name, timeout, 500*time.Millisecond, saReady); err != nil {
		return err
	}
	for _, d := range deps {
		if _, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	for _, s := range sets {
		if _, err := cs.AppsV1().StatefulSets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating StatefulSet %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	ready := func(ctx context.Context) (bool, error) {
		for _, d := range deps {
			got, err := cs.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil || got.Status.ReadyReplicas != *d.Spec.Replicas || got.Status.ObservedGeneration < got.Generation {
				return false, err
			}
		}
		for _, s := range sets {
			got, err := cs.AppsV1().StatefulSets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil || got.Status.ReadyReplicas != *s.Spec.Replicas {
				return false, err
			}
		}
		for _, p := range pods {
			got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Status.Phase != corev1.PodRunning {
				return false, err
			}
		}
		return true, nil
	}
	return lab.WaitFor(ctx, "the drill workload in namespace "+ns.Name+" to be ready", timeout, time.Second, ready)
}
