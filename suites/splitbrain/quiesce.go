package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/lab/apiretry"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// waits until no node mounts the volumes of the run's workloads ws, so
// that the final reads see the stored state as nothing writes it: the
// file, the database and the file system as they will stay. A mount that
// outlasts the wait is not an error: the reads name it, and every
// invariant that needs the volume unmounted judges INSUFFICIENT_DATA. A
// read of the volume that failed says nothing of its mounts, so it is
// waited on as a mount would be. logf says how it went.
func Quiesce(ctx context.Context, cs kubernetes.Interface, sd lab.StoredData, ws []Workload, timeout time.Duration, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := scaleToZero(ctx, cs); err != nil {
		return err
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
			left = mountsLeft(ctx, cs, sd, ws)
		default:
			left = mountsLeft(ctx, cs, sd, ws)
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

// scaleToZero scales every StatefulSet and Deployment of the namespace to
// 0, each read afresh before its write (so a conflict is asked again with
// the object as it is); one that is gone needs no scaling. A list or
// write the API server dropped is asked again (apiretry.Backoff: a
// connection through the virtual address is reset when keepalived moves
// it, and a loaded API server times a request out); a refusal is final.
func scaleToZero(ctx context.Context, cs kubernetes.Interface) error {
	sets := cs.AppsV1().StatefulSets(Namespace)
	deps := cs.AppsV1().Deployments(Namespace)
	kinds := []struct {
		kind  string
		names func() ([]string, error)
		zero  func(name string) error
	}{
		{"statefulset", func() ([]string, error) {
			l, err := sets.List(ctx, metav1.ListOptions{})
			return namesOf(l, err)
		}, func(name string) error {
			o, err := sets.Get(ctx, name, metav1.GetOptions{})
			if err != nil || zeroed(&o.Spec.Replicas) {
				return err
			}
			_, err = sets.Update(ctx, o, metav1.UpdateOptions{})
			return err
		}},
		{"deployment", func() ([]string, error) {
			l, err := deps.List(ctx, metav1.ListOptions{})
			return namesOf(l, err)
		}, func(name string) error {
			o, err := deps.Get(ctx, name, metav1.GetOptions{})
			if err != nil || zeroed(&o.Spec.Replicas) {
				return err
			}
			_, err = deps.Update(ctx, o, metav1.UpdateOptions{})
			return err
		}},
	}
	for _, k := range kinds {
		var names []string
		if err := apiretry.Do(ctx, apiretry.Backoff, apiretry.DroppedOrConflict, func() (err error) {
			names, err = k.names()
			return err
		}); err != nil {
			return fmt.Errorf("listing the %ss of %s: %w", k.kind, Namespace, err)
		}
		for _, name := range names {
			err := apiretry.Do(ctx, apiretry.Backoff, apiretry.DroppedOrConflict, func() error {
				if err := k.zero(name); !apierrors.IsNotFound(err) {
					return err
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("scaling %s %s to 0: %w", k.kind, name, err)
			}
		}
	}
	return nil
}

// namesOf names the items of a list that was read.
func namesOf(list runtime.Object, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	var names []string
	err = meta.EachListItem(list, func(o runtime.Object) error {
		a, err := meta.Accessor(o)
		if err == nil {
			names = append(names, a.GetName())
		}
		return err
	})
	return names, err
}

// zeroed says whether replicas is 0 already, and otherwise sets it to 0.
func zeroed(replicas **int32) bool {
	if *replicas != nil && **replicas == 0 {
		return true
	}
	zero := int32(0)
	*replicas = &zero
	return false
}

// mountsLeft names the mounts of the volumes of the workloads ws, or why
// they could not be looked at; empty only when every volume was read and
// none is mounted (a file not there is a read that worked).
func mountsLeft(ctx context.Context, cs kubernetes.Interface, sd lab.StoredData, ws []Workload) string {
	var left []string
	for _, w := range dataWorkloads {
		if !slices.Contains(ws, w.workload) {
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
