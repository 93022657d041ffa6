package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab"
)

// QuiesceTimeout bounds the wait for the workloads to stop and their
// volumes to be unmounted everywhere.
const QuiesceTimeout = 2 * time.Minute

// Quiesce stops every workload of the suite's namespace (each
// StatefulSet and Deployment scaled to 0), waits until no pod of it is
// left, marks its claims quiesced (lab.QuiescedClaimAnnotation: a lab
// that reads volumes through the cluster may then mount them), and then
// waits until no node mounts the running scenario's volumes, so
// that the final reads see the stored state as nothing writes it: the
// file, the database and the file system as they will stay. A mount that
// outlasts the wait is not an error: the reads name it, and every
// invariant that needs the volume unmounted judges INSUFFICIENT_DATA. A
// read of the volume that failed says nothing of its mounts, so it is
// waited on as a mount would be. logf says how it went.
func Quiesce(ctx context.Context, cs kubernetes.Interface, sd lab.StoredData, timeout time.Duration, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	zero := int32(0)
	sets, err := cs.AppsV1().StatefulSets(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the statefulsets of %s: %w", Namespace, err)
	}
	for _, s := range sets.Items {
		if s.Spec.Replicas != nil && *s.Spec.Replicas == 0 {
			continue
		}
		s.Spec.Replicas = &zero
		if _, err := cs.AppsV1().StatefulSets(Namespace).Update(ctx, &s, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("scaling statefulset %s to 0: %w", s.Name, err)
		}
	}
	deps, err := cs.AppsV1().Deployments(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the deployments of %s: %w", Namespace, err)
	}
	for _, d := range deps.Items {
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
			continue
		}
		d.Spec.Replicas = &zero
		if _, err := cs.AppsV1().Deployments(Namespace).Update(ctx, &d, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("scaling deployment %s to 0: %w", d.Name, err)
		}
	}
	var left string
	marked := false
	for {
		pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
		switch {
		case err != nil:
			left = "listing pods: " + err.Error()
		case len(pods.Items) > 0:
			var names []string
			for _, p := range pods.Items {
				names = append(names, p.Name+" on "+orNone(p.Spec.NodeName))
			}
			left = "pods left: " + strings.Join(names, ", ")
		case !marked:
			if err := markQuiesced(ctx, cs); err != nil {
				left = err.Error()
				break
			}
			marked = true
			left = mountsLeft(ctx, cs, sd)
		default:
			left = mountsLeft(ctx, cs, sd)
		}
		if left == "" {
			logf("quiesce: every workload stopped and no volume mounted")
			return nil
		}
		select {
		case <-ctx.Done():
			logf("quiesce: not quiet after %s (%s): the final reads say so", timeout, left)
			return nil
		case <-time.After(time.Second):
		}
	}
}

// markQuiesced marks every claim of the suite's namespace quiesced
// (lab.QuiescedClaimAnnotation): a lab that reads volumes through the
// cluster reads only such a claim, once nothing mounts it.
func markQuiesced(ctx context.Context, cs kubernetes.Interface) error {
	claims, err := cs.CoreV1().PersistentVolumeClaims(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the claims of %s: %w", Namespace, err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for _, c := range claims.Items {
		if _, ok := c.Annotations[lab.QuiescedClaimAnnotation]; ok {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, lab.QuiescedClaimAnnotation, now)
		if _, err := cs.CoreV1().PersistentVolumeClaims(Namespace).Patch(ctx, c.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("marking claim %s quiesced: %w", c.Name, err)
		}
	}
	return nil
}

// mountsLeft names the mounts of the active workloads' volumes, or why
// they could not be looked at; empty only when every volume was read and
// none is mounted (a file not there is a read that worked).
func mountsLeft(ctx context.Context, cs kubernetes.Interface, sd lab.StoredData) string {
	var left []string
	for _, w := range dataWorkloads {
		if !Active(w.workload) {
			continue
		}
		r := storedReader{w: w, api: cs}
		handle, err := r.volume(ctx)
		if err != nil {
			left = append(left, fmt.Sprintf("%s's volume: %v", w.workload, err))
			continue
		}
		f, err := sd.ReadVolumeFile(ctx, handle, w.file)
		switch {
		case len(f.MountedOn) > 0:
			m := slices.Clone(f.MountedOn)
			slices.Sort(m)
			left = append(left, fmt.Sprintf("%s's volume mounted on %s", w.workload, strings.Join(m, ", ")))
		case err != nil && !errors.Is(err, lab.ErrNoSuchFile):
			// A read that failed may have failed before it looked at the
			// mounts: it says nothing of them, least of all "none".
			left = append(left, fmt.Sprintf("%s's volume: whether it is mounted is unknown, its read failed: %v", w.workload, err))
		}
	}
	return strings.Join(left, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "no node"
	}
	return s
}
