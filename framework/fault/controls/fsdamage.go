package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindStopThenDamageFilesystem is the kind of StopThenDamageFilesystem
// faults.
const KindStopThenDamageFilesystem = "stop-then-damage-filesystem"

// FilesystemDamage names the StatefulSet whose block volume's file system
// is damaged, and its claim.
type FilesystemDamage struct {
	Namespace   string `json:"namespace"`
	StatefulSet string `json:"statefulSet"`
	Claim       string `json:"claim"`
	// Replicas is what Heal scales the StatefulSet back to.
	Replicas int32 `json:"replicas"`
}

// StopWait bounds how long StopThenDamageFilesystem waits for the
// volume to be let go: the pod's graceful stop (30 s by default), the
// unpublish and unstage of its volume, and the detach.
const StopWait = 2 * time.Minute

// StopThenDamageFilesystem stops a StatefulSet (scaled to 0), as an
// operator who checks the data stops the application first, waits until
// no node mounts its claim's block volume, and breaks the volume's file
// system metadata where the storage holds it (lab.VolumeDamager's
// DamageVolumeFilesystem): the positive control of storage-integrity's
// file system check. Heal scales the StatefulSet back; the damage outlives
// it on purpose (no mount repairs it), as the stored state the check
// judges after heal, and the lab's reset makes the volume anew.
func StopThenDamageFilesystem(d FilesystemDamage) fault.Fault { return &fsDamage{d: d} }

type fsDamage struct{ d FilesystemDamage }

func (f *fsDamage) Kind() string            { return KindStopThenDamageFilesystem }
func (f *fsDamage) Class() fault.Class      { return ClassStorageDamage }
func (f *fsDamage) Params() json.RawMessage { return mustJSON(KindStopThenDamageFilesystem, f.d) }

func (f *fsDamage) Inject(ctx context.Context, l lab.Lab) error {
	d := f.d
	dm, ok := l.(lab.VolumeDamager)
	if !ok {
		return lab.Unsupported(l.Info().Kind, "damaging a volume's file system", fmt.Sprintf("lab %s cannot damage its storage (lab.VolumeDamager)", l.Info().Name))
	}
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("file system damage: %w", err)
	}
	handle, err := VolumeHandle(ctx, cs, d.Namespace, d.Claim)
	if err != nil {
		return fmt.Errorf("file system damage: %w", err)
	}
	if err := scale(ctx, l, d.Namespace, d.StatefulSet, 0); err != nil {
		return fmt.Errorf("file system damage: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, StopWait)
	defer cancel()
	for {
		_, err := dm.DamageVolumeFilesystem(ctx, handle)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, lab.ErrVolumeMounted):
			return fmt.Errorf("file system damage: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("file system damage: statefulset %s/%s scaled to 0, and its volume %s still mounted after %s: %w", d.Namespace, d.StatefulSet, handle, StopWait, err)
		case <-time.After(time.Second):
		}
	}
}

// scale sets the StatefulSet's replicas.
func scale(ctx context.Context, l lab.Lab, namespace, name string, replicas int32) error {
	cs, err := client(l, "")
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err = cs.AppsV1().StatefulSets(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("scaling statefulset %s/%s to %d: %w", namespace, name, replicas, err)
	}
	return nil
}

// Heal scales the StatefulSet back to its replicas; one that is gone (the
// next reset's work) is healed.
func (f *fsDamage) Heal(ctx context.Context, l lab.Lab) error {
	err := scale(ctx, l, f.d.Namespace, f.d.StatefulSet, f.d.Replicas)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Probe sees the fault when the file system check of the claim's volume
// finds errors (exit status bit 4, errors left uncorrected); while a node
// mounts the volume it cannot look.
func (f *fsDamage) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	fc, ok := l.(lab.FilesystemChecker)
	if !ok {
		return fault.Effect{}, fmt.Errorf("lab %s cannot check a volume's file system", l.Info().Name)
	}
	cs, err := client(l, "")
	if err != nil {
		return fault.Effect{}, err
	}
	handle, err := VolumeHandle(ctx, cs, f.d.Namespace, f.d.Claim)
	if err != nil {
		return fault.Effect{}, err
	}
	c, err := fc.CheckVolumeFilesystem(ctx, handle)
	if err != nil {
		return fault.Effect{}, fmt.Errorf("checking the file system of %s: %w", handle, err)
	}
	return fault.Effect{Observed: c.ExitCode&4 != 0, Detail: fmt.Sprintf("e2fsck -fn of %s: exit %d", c.Image, c.ExitCode)}, nil
}

func decodeFSDamage(raw json.RawMessage) (fault.Fault, error) {
	var d FilesystemDamage
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	if d.Namespace == "" || d.StatefulSet == "" || d.Claim == "" || d.Replicas < 1 {
		return nil, errors.New("namespace, statefulSet, claim and replicas (at least 1) are all needed")
	}
	return StopThenDamageFilesystem(d), nil
}

func init() { fault.Register(KindStopThenDamageFilesystem, decodeFSDamage) }

// ClassStorageDamage is the class of the controls that damage stored data
// on purpose, through the lab's storage (lab.VolumeDamager).
const ClassStorageDamage fault.Class = "storage-damage"

// VolumeHandle is the CSI volume handle of the claim's bound volume.
func VolumeHandle(ctx context.Context, cs kubernetes.Interface, namespace, claim string) (string, error) {
	pvc, err := cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("claim %s/%s: %w", namespace, claim, err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("claim %s/%s is not bound", namespace, claim)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("volume %s of claim %s/%s: %w", pvc.Spec.VolumeName, namespace, claim, err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.VolumeHandle == "" {
		return "", fmt.Errorf("volume %s of claim %s/%s is not a CSI volume", pv.Name, namespace, claim)
	}
	return pv.Spec.CSI.VolumeHandle, nil
}
