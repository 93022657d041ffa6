// Package splitbrain is paper 3's suite: what happens to the data a
// workload stores when a fault leaves two copies of it running, each
// acting as the only one. This package holds what the suite's tests and
// other programs share: the fixtures (the ledger StatefulSet on a volume
// of the lab's storage), the shape of the lab, and the ledger's evidence.
package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/lab/apiretry"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/fixtures/program"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/cleanup"
	"github.com/faultline/faultline/lab/topology"
)

// The ledger fixture: one StatefulSet replica appending to a log on its
// claim, keeping its history in the lab's external store.
const (
	Namespace = "faultline-split"
	Ledger    = "ledger"
	// LedgerPod is the StatefulSet's only pod, the one the scenarios
	// cut off and force-delete.
	LedgerPod = Ledger + "-0"
	// LedgerClaim is the pod's claim, from the volume claim template
	// "data": every copy of ledger-0 mounts it.
	LedgerClaim = "data-" + LedgerPod
	LedgerFile  = "ledger.log"
	// LedgerNode is where ledger-0 starts (preferred, not required: its
	// replacement must be free to start elsewhere).
	LedgerNode = "worker1"
	// HistoryPrefix is where the ledger's writers keep their histories in
	// the external store.
	HistoryPrefix = "/faultline/splitbrain/ledger/"
	// AppendInterval is the time between two appends' starts: 5 a second,
	// so a 40 s window holds about 200 of each copy's.
	AppendInterval = 200 * time.Millisecond
)

// Lab11S is the shape of the paper's lab: lab11's hosts plus a storage
// host (label topology:lab11s).
var Lab11S = scenario.Shape{Name: "lab11s", Check: func(l lab.Lab) error { return CheckShape(l) }}

// CheckShape says what l lacks of lab11s: lab11's hosts and roles, and
// storage that offers a shared class and an external store.
func CheckShape(l lab.Lab) error {
	var errs []error
	if err := topology.Lab11.Check(l.Config()); err != nil {
		errs = append(errs, err)
	}
	sd, ok := l.(lab.StoredData)
	if !ok {
		errs = append(errs, fmt.Errorf("lab %s offers no storage for paper 3 (a lab kind with lab.StoredData)", l.Config().Name))
	} else if info, err := sd.StorageInfo(); err != nil {
		errs = append(errs, err)
	} else if info.SharedClass == "" || len(info.HistoryEndpoints) == 0 {
		errs = append(errs, fmt.Errorf("lab %s's storage has no shared class or no external store", l.Config().Name))
	}
	return errors.Join(errs...)
}

// The kvdb fixture: one StatefulSet replica read-modify-writing a bbolt
// database on its claim (fixtures/kvdb), its history in the external
// store.
const (
	KVDB      = "kvdb"
	KVDBPod   = KVDB + "-0"
	KVDBClaim = "data-" + KVDBPod
	KVDBFile  = "kv.db"
	// KVDBHistoryPrefix is where the database's writers keep their
	// histories in the external store.
	KVDBHistoryPrefix = "/faultline/splitbrain/kvdb/"
	// KVDBInterval is the time between two operations' starts.
	KVDBInterval = 100 * time.Millisecond
)

// LedgerStatefulSet is the ledger on a claim of class, its history in the
// store at endpoints, appending in mode (ledgerlog.ModeNaive or
// ledgerlog.ModeLocked).
func LedgerStatefulSet(class string, endpoints []string, mode string) *appsv1.StatefulSet {
	return statefulSet(Ledger, images.Ref("ledger"), class, []string{
		"--dir=/data", "--file=" + LedgerFile,
		"--interval=" + AppendInterval.String(),
		"--history-endpoints=" + strings.Join(endpoints, ","),
		"--history-prefix=" + HistoryPrefix,
		"--mode=" + mode,
	})
}

// LabelLedgerMode prefixes the label that sets how the ledger appends
// ("ledger-mode:locked"); without one it appends naively.
const LabelLedgerMode = "ledger-mode:"

// LedgerModeOf is the ledger's mode by labels: ledgerlog.ModeNaive
// unless a ledger-mode: label names another; an error for a mode the
// ledger does not have, or two.
func LedgerModeOf(labels []string) (string, error) {
	mode := ""
	for _, l := range labels {
		m, ok := strings.CutPrefix(l, LabelLedgerMode)
		if !ok {
			continue
		}
		if m != ledgerlog.ModeNaive && m != ledgerlog.ModeLocked {
			return "", fmt.Errorf("label %q: the ledger appends %s or %s", l, ledgerlog.ModeNaive, ledgerlog.ModeLocked)
		}
		if mode != "" && mode != m {
			return "", fmt.Errorf("labels name two ledger modes, %s and %s", mode, m)
		}
		mode = m
	}
	if mode == "" {
		mode = ledgerlog.ModeNaive
	}
	return mode, nil
}

// KVDBStatefulSet is the database workload on a claim of class, its
// history in the store at endpoints. It opens the database for each
// operation and closes it after (fixtures/kvdb's default), so two copies
// whose file locks meet take turns.
func KVDBStatefulSet(class string, endpoints []string) *appsv1.StatefulSet {
	return statefulSet(KVDB, images.Ref("kvdb"), class, []string{
		"--dir=/data", "--file=" + KVDBFile,
		"--interval=" + KVDBInterval.String(),
		"--history-endpoints=" + strings.Join(endpoints, ","),
		"--history-prefix=" + KVDBHistoryPrefix,
	})
}

// statefulSet is one replica of a data workload named name, preferring
// LedgerNode, with its volume claim template "data" of class mounted at
// /data, ready by its /readyz on 8080.
func statefulSet(name, image, class string, args []string) *appsv1.StatefulSet {
	one := int32(1)
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &one,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
							Weight: 100,
							Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
								Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{LedgerNode},
							}}},
						}},
					}},
					Tolerations: lostNodeTolerations(),
					Containers: []corev1.Container{{
						Name:           name,
						Image:          image,
						Args:           args,
						Env:            identityEnv(),
						VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
						ReadinessProbe: readyzProbe(),
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
				},
			}},
		},
	}
}

// lostNodeTolerations keep a workload's pod on a node the control plane
// has lost, or that is not Ready, for an hour (a pod with the default
// tolerations stays 5 minutes): the cut node's copy is the one the
// scenarios leave running, not one the taint manager evicts.
func lostNodeTolerations() []corev1.Toleration {
	long := int64(3600)
	return []corev1.Toleration{
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &long},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &long},
	}
}

// identityEnv is the writer's identity from the downward API (pod name,
// UID, node; history.Identity), then more.
func identityEnv(more ...corev1.EnvVar) []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return append([]corev1.EnvVar{
		field(program.EnvPodName, "metadata.name"),
		field(program.EnvPodUID, "metadata.uid"),
		field(program.EnvNodeName, "spec.nodeName"),
	}, more...)
}

// readyzProbe is the workloads' readiness: their /readyz on 8080, every
// second.
func readyzProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
}

// EnsureNamespace creates the suite's namespace unless it is there, as a
// namespace a cleanup reset deletes (cleanup.EnsureOwnedNamespace).
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface) error {
	return cleanup.EnsureOwnedNamespace(ctx, cs, Namespace)
}

// InstallStatefulSet creates the namespace and sts, and waits until its
// pod 0 is ready on LedgerNode.
func InstallStatefulSet(ctx context.Context, cs kubernetes.Interface, sts *appsv1.StatefulSet, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := EnsureNamespace(ctx, cs); err != nil {
		return err
	}
	if err := apiretry.Create(ctx, func() error {
		_, err := cs.AppsV1().StatefulSets(Namespace).Create(ctx, sts, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating statefulset %s: %w", sts.Name, err)
	}
	pod := sts.Name + "-0"
	var last string
	for {
		p, err := cs.CoreV1().Pods(Namespace).Get(ctx, pod, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case p.Spec.NodeName != "" && p.Spec.NodeName != LedgerNode:
			return fmt.Errorf("%s was scheduled to %s, not %s: the scenarios cut %s off", pod, p.Spec.NodeName, LedgerNode, LedgerNode)
		case podReady(p):
			return nil
		default:
			last = fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s/%s to be ready: %s (%w)", Namespace, pod, last, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
