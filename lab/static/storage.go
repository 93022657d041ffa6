package static

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/faultline/faultline/lab"
)

// The static lab's stored data (lab.StoredData) is the lab file's
// storage section: StorageClasses the cluster's own storage serves, and
// an external store for the histories. It cannot read its storage
// directly, so it reads a volume's file through the cluster: once a
// suite has marked the claim quiesced (lab.QuiescedClaimAnnotation) and
// no node mounts the volume, a short-lived pod mounts the claim read-only
// and the file is read on that pod's node, under its mount.

var _ lab.StoredData = (*Lab)(nil)

// readerTimeout bounds one read through a reader pod: scheduling, the
// volume attached and mounted (the attach-detach controller's sync and
// the kubelet's volume manager, seconds each), the read, and the request
// to delete the pod.
const readerTimeout = 2 * time.Minute

// readerNeeds is the least time left on a read's context for it to start
// a reader pod: a sampler's round (seconds) never does, so its reads give
// only what quiesce read with time to spare and kept.
const readerNeeds = 30 * time.Second

// unmountWait bounds the wait, after a read, for the reader pod's mount
// to go, so that the next read finds the volume quiet: the kubelet
// unmounts a deleted pod's volumes within its volume manager's loop.
const unmountWait = time.Minute

// storageSettings is the lab file's storage section, or an error saying
// the lab has none.
func (l *Lab) storageSettings(op string) (*lab.StorageSettings, error) {
	if l.cfg.Storage == nil {
		return nil, lab.Unsupported(l.cfg.Kind, op, fmt.Sprintf("lab %s's file has no storage section", l.cfg.Name))
	}
	return l.cfg.Storage, nil
}

// StorageInfo is the lab file's storage section: its classes, the
// external store's endpoints, the host that runs the store (when
// faultline runs it; else the lab's storage host, if it has one) and what
// it declares emulated.
func (l *Lab) StorageInfo() (lab.StorageInfo, error) {
	s, err := l.storageSettings("storage")
	if err != nil {
		return lab.StorageInfo{}, err
	}
	host := s.History.Host
	if host == "" {
		if hs := lab.HostsWithRole(l, lab.RoleStorage); len(hs) > 0 {
			host = hs[0].Name()
		}
	}
	return lab.StorageInfo{
		SharedClass:      s.SharedClass,
		BlockClass:       s.BlockClass,
		BlockMMPClass:    s.BlockMMPClass,
		BlockFencedClass: s.BlockFencedClass,
		HistoryEndpoints: l.historyEndpoints(),
		StorageHost:      host,
		Emulated:         slices.Clone(s.Emulated),
	}, nil
}

// volumeLocks keeps one read of a volume at a time, so that two readers
// of one volume never start two reader pods.
type volumeLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// read are the files read through a reader pod, by claim UID and
	// file: a quiesced claim's volume is written no more.
	read map[string]lab.VolumeFile
}

func (v *volumeLocks) lock(handle string) func() {
	v.mu.Lock()
	if v.locks == nil {
		v.locks = map[string]*sync.Mutex{}
	}
	m, ok := v.locks[handle]
	if !ok {
		m = &sync.Mutex{}
		v.locks[handle] = m
	}
	v.mu.Unlock()
	m.Lock()
	return m.Unlock
}

func (v *volumeLocks) cached(key string) (lab.VolumeFile, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f, ok := v.read[key]
	return f, ok
}

func (v *volumeLocks) keep(key string, f lab.VolumeFile) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.read == nil {
		v.read = map[string]lab.VolumeFile{}
	}
	v.read[key] = f
}

// forget drops every kept read (a reset makes every claim anew).
func (v *volumeLocks) forget() {
	v.mu.Lock()
	v.read = nil
	v.mu.Unlock()
}

// ReadVolumeFile reads file of the volume the CSI volume handle names,
// through the cluster. It first asks every worker, over SSH, whether it
// mounts the volume (a pod's mount or the staging mount under the
// host's kubelet root): a worker that does not answer makes the read
// fail, and a volume mounted anywhere is not read (the error names the
// hosts, MountedOn lists them). A volume nothing mounts is read only if
// its claim is marked quiesced and no pod of the API uses it: a reader
// pod then mounts the claim read-only on a worker, the file is read
// there under the pod's mount, and the pod is deleted. A file read so is
// kept for the claim and file, and given again while nothing mounts the
// volume. A file the volume does not hold is an error wrapping
// lab.ErrNoSuchFile.
func (l *Lab) ReadVolumeFile(ctx context.Context, volumeHandle, file string) (lab.VolumeFile, error) {
	s, err := l.storageSettings("reading a volume")
	if err != nil {
		return lab.VolumeFile{}, err
	}
	if !filepath.IsLocal(file) {
		return lab.VolumeFile{}, fmt.Errorf("reading %q of volume %s: not a path inside the volume", file, volumeHandle)
	}
	kube, err := l.Kube()
	if err != nil {
		return lab.VolumeFile{}, err
	}
	defer l.volumes.lock(volumeHandle)()
	pv, err := persistentVolumeOf(ctx, kube.CoreV1().PersistentVolumes(), volumeHandle)
	if err != nil {
		return lab.VolumeFile{}, err
	}
	mounted, err := l.mountedOn(ctx, pv)
	out := lab.VolumeFile{MountedOn: mounted}
	if err != nil {
		return out, fmt.Errorf("reading volume %s: %w", volumeHandle, err)
	}
	if len(mounted) > 0 {
		return out, fmt.Errorf("volume %s is mounted on %s: it is read through the cluster only once nothing mounts it", volumeHandle, strings.Join(mounted, ", "))
	}
	claim, err := quiescedClaim(ctx, kube.CoreV1(), pv)
	if err != nil {
		return out, fmt.Errorf("reading volume %s: %w", volumeHandle, err)
	}
	key := string(claim.UID) + "/" + file
	if f, ok := l.volumes.cached(key); ok {
		return f, nil
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < readerNeeds {
		return out, fmt.Errorf("reading volume %s: not read yet, and a read through a reader pod needs %s where this one has %s left (quiesce reads it with time to spare)",
			volumeHandle, readerNeeds, time.Until(d).Round(time.Millisecond))
	}
	f, err := l.readThroughPod(ctx, s, claim, pv, file)
	if err != nil && !errors.Is(err, lab.ErrNoSuchFile) {
		return out, fmt.Errorf("reading %s of volume %s through a reader pod: %w", file, volumeHandle, err)
	}
	l.volumes.keep(key, f)
	return f, err
}

// persistentVolumeOf finds the PersistentVolume of a CSI volume handle.
func persistentVolumeOf(ctx context.Context, pvs typedcorev1.PersistentVolumeInterface, handle string) (*corev1.PersistentVolume, error) {
	list, err := pvs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the persistent volumes to find volume %s: %w", handle, err)
	}
	for i := range list.Items {
		pv := &list.Items[i]
		if pv.Spec.CSI != nil && pv.Spec.CSI.VolumeHandle == handle {
			return pv, nil
		}
	}
	return nil, fmt.Errorf("no persistent volume has the CSI volume handle %s", handle)
}

// quiescedClaim is pv's claim, if it is marked quiesced and no pod that
// has not ended uses it.
func quiescedClaim(ctx context.Context, core typedcorev1.CoreV1Interface, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return nil, fmt.Errorf("volume %s is bound to no claim", pv.Name)
	}
	pvc, err := core.PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("its claim %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if ref.UID != "" && pvc.UID != ref.UID {
		return nil, fmt.Errorf("its claim %s/%s is not the one it was bound to", ref.Namespace, ref.Name)
	}
	if _, ok := pvc.Annotations[lab.QuiescedClaimAnnotation]; !ok {
		return nil, fmt.Errorf("claim %s/%s is not marked quiesced (%s): its workloads may still mount it, and a reader pod must not compete with them", ref.Namespace, ref.Name, lab.QuiescedClaimAnnotation)
	}
	pods, err := core.Pods(ref.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", ref.Namespace, err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == ref.Name {
				return nil, fmt.Errorf("pod %s/%s still uses claim %s", p.Namespace, p.Name, ref.Name)
			}
		}
	}
	return pvc, nil
}

// mountedOn names the workers that mount pv: each is asked over SSH, in
// parallel; one that does not answer is an error naming it (the others'
// mounts are still returned).
func (l *Lab) mountedOn(ctx context.Context, pv *corev1.PersistentVolume) ([]string, error) {
	var (
		mu      sync.Mutex
		mounted []string
		errs    []error
		wg      sync.WaitGroup
	)
	for _, h := range l.nodeHosts() {
		if !h.HasRole(lab.RoleWorker) {
			continue
		}
		wg.Go(func() {
			mounts, err := volumeMounts(ctx, h, l.kubeletRoot(h.Name()), pv)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("cannot tell whether %s mounts it: %w", h.Name(), err))
			case len(mounts) > 0:
				mounted = append(mounted, h.Name())
			}
		})
	}
	wg.Wait()
	slices.Sort(mounted)
	return mounted, errors.Join(errs...)
}

// volumeMounts lists the mounts of pv on host under its kubelet root
// (/proc/self/mountinfo): a pod's (pods/<uid>/volumes/kubernetes.io~csi/
// <pv>/mount) and the staging mount (plugins/kubernetes.io/csi/<driver>/
// <sha256 of the handle>/globalmount since kubelet v1.2x, .../csi/pv/
// <pv>/globalmount before).
func volumeMounts(ctx context.Context, h lab.Host, root string, pv *corev1.PersistentVolume) ([]string, error) {
	res, err := h.Run(ctx, mountsScript(root, pv))
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("reading its mount table exited %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return strings.Fields(res.Stdout), nil
}

func mountsScript(root string, pv *corev1.PersistentVolume) string {
	driver, handle := "", ""
	if pv.Spec.CSI != nil {
		driver, handle = pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	}
	sum := sha256.Sum256([]byte(handle))
	root = strings.TrimRight(root, "/")
	pods := root + "/pods/"
	podMount := "/volumes/kubernetes.io~csi/" + pv.Name + "/mount"
	staged := root + "/plugins/kubernetes.io/csi/" + driver + "/" + hex.EncodeToString(sum[:]) + "/globalmount"
	stagedOld := root + "/plugins/kubernetes.io/csi/pv/" + pv.Name + "/globalmount"
	return "awk -v p=" + shellQuote(pods) + " -v a=" + shellQuote(podMount) + " -v b=" + shellQuote(staged) + " -v c=" + shellQuote(stagedOld) +
		` '{ m = $5; if ((index(m, p) == 1 && length(m) >= length(a) && substr(m, length(m) - length(a) + 1) == a) || m == b || m == c) print m }' /proc/self/mountinfo`
}

// Exit statuses of the read script.
const (
	exitNotMounted = 3
	exitNoFile     = 4
	exitNotRegular = 5
)

// readScript prints the size of file under the reader pod's mount of pv
// on its node, a newline, then the file.
func readScript(root string, podUID types.UID, pv, file string) string {
	mount := strings.TrimRight(root, "/") + "/pods/" + string(podUID) + "/volumes/kubernetes.io~csi/" + pv + "/mount"
	return fmt.Sprintf(`m=%s; f="$m"/%s; `+
		`awk -v m="$m" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo || exit %d; `+
		`[ -e "$f" ] || [ -L "$f" ] || exit %d; [ -f "$f" ] || exit %d; `+
		`stat -c %%s -- "$f" && cat -- "$f"`,
		shellQuote(mount), shellQuote(file), exitNotMounted, exitNoFile, exitNotRegular)
}

// readerPodName is the reader pod of a claim.
func readerPodName(claim string) string {
	sum := sha256.Sum256([]byte(claim))
	return "faultline-volume-reader-" + hex.EncodeToString(sum[:])[:10]
}

// readerPod mounts claim read-only on one of the lab's workers and does
// nothing else.
func readerPod(namespace, claim, image string, workers []string) *corev1.Pod {
	zero := int64(0)
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: readerPodName(claim), Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "faultline-volume-reader", "app.kubernetes.io/managed-by": "faultline"},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: workers}},
				}}},
			}},
			Containers: []corev1.Container{{
				Name: "reader", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true},
			}}},
		},
	}
}

// readThroughPod starts the reader pod, reads file on its node, and
// deletes it; it then waits (bounded) for the node to unmount the
// volume.
func (l *Lab) readThroughPod(ctx context.Context, s *lab.StorageSettings, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, file string) (lab.VolumeFile, error) {
	kube, err := l.Kube()
	if err != nil {
		return lab.VolumeFile{}, err
	}
	var workers []string
	for _, h := range l.nodeHosts() {
		if h.HasRole(lab.RoleWorker) {
			workers = append(workers, h.Name())
		}
	}
	if len(workers) == 0 {
		return lab.VolumeFile{}, fmt.Errorf("lab %s has no worker to run a reader pod on", l.cfg.Name)
	}
	pods := kube.CoreV1().Pods(claim.Namespace)
	want := readerPod(claim.Namespace, claim.Name, s.ReaderImage, workers)
	rctx, cancel := context.WithTimeout(ctx, readerTimeout)
	defer cancel()
	created, err := pods.Create(rctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// One left by a read that could not delete it: start anew.
		if err := deletePod(rctx, pods, want.Name); err != nil {
			return lab.VolumeFile{}, err
		}
		created, err = pods.Create(rctx, want, metav1.CreateOptions{})
	}
	if err != nil {
		return lab.VolumeFile{}, fmt.Errorf("creating reader pod %s/%s: %w", want.Namespace, want.Name, err)
	}
	var node string
	defer func() {
		// The delete is asked even when ctx has ended: a reader pod left
		// would hold the volume.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), unmountWait)
		defer dcancel()
		if err := deletePod(dctx, pods, created.Name); err != nil {
			return
		}
		l.waitUnmounted(dctx, node, pv)
	}()
	running, err := waitRunning(rctx, pods, created.Name)
	if err != nil {
		return lab.VolumeFile{}, err
	}
	node = running.Spec.NodeName
	h, err := l.nodeHost(node)
	if err != nil {
		return lab.VolumeFile{}, fmt.Errorf("reader pod %s runs on %s: %w", created.Name, node, err)
	}
	res, err := h.Run(rctx, readScript(l.kubeletRoot(node), running.UID, pv.Name, file))
	if err != nil {
		return lab.VolumeFile{}, fmt.Errorf("reading on %s: %w", node, err)
	}
	path := fmt.Sprintf("%s on %s, mounted by pod %s/%s", file, node, created.Namespace, created.Name)
	switch res.ExitCode {
	case 0:
	case exitNotMounted:
		return lab.VolumeFile{}, fmt.Errorf("%s runs reader pod %s but has no mount of volume %s under %s", node, created.Name, pv.Name, l.kubeletRoot(node))
	case exitNoFile:
		return lab.VolumeFile{Path: path}, fmt.Errorf("%w: %s", lab.ErrNoSuchFile, path)
	case exitNotRegular:
		return lab.VolumeFile{}, fmt.Errorf("%s is not a regular file", path)
	default:
		return lab.VolumeFile{}, fmt.Errorf("reading %s exited %d: %s", path, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	data, err := sizedOutput(res.Stdout)
	if err != nil {
		return lab.VolumeFile{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return lab.VolumeFile{Path: path, Data: data}, nil
}

// sizedOutput is the file of the read script's output: its size on the
// first line, then exactly that many bytes.
func sizedOutput(out string) ([]byte, error) {
	first, rest, ok := strings.Cut(out, "\n")
	if !ok {
		return nil, fmt.Errorf("the output has no size line: %q", truncate(out, 80))
	}
	size, err := strconv.Atoi(first)
	if err != nil || size < 0 {
		return nil, fmt.Errorf("the output's first line %q is not a size", truncate(first, 80))
	}
	if len(rest) != size {
		return nil, fmt.Errorf("the file is %d bytes, the output holds %d", size, len(rest))
	}
	return []byte(rest), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// nodeHosts are the hosts the storage code runs commands on: the lab's,
// or a test's.
func (l *Lab) nodeHosts() []lab.Host {
	if l.testHosts != nil {
		return l.testHosts
	}
	return l.Hosts()
}

// nodeHost is the host called name.
func (l *Lab) nodeHost(name string) (lab.Host, error) {
	for _, h := range l.nodeHosts() {
		if h.Name() == name {
			return h, nil
		}
	}
	return nil, fmt.Errorf("no host of lab %s is called %s", l.cfg.Name, name)
}

// kubeletRoot is the named host's kubelet root, as the lab file says.
func (l *Lab) kubeletRoot(name string) string {
	hc, _ := l.cfg.HostConfig(name)
	return hc.KubeletRoot()
}

// waitRunning waits until the pod runs (its volumes are then mounted),
// and fails as soon as it ended or ctx does.
func waitRunning(ctx context.Context, pods typedcorev1.PodInterface, name string) (*corev1.Pod, error) {
	var last string
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case p.Status.Phase == corev1.PodRunning:
			return p, nil
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			return nil, fmt.Errorf("reader pod %s ended (%s) before it was read: %s", name, p.Status.Phase, p.Status.Message)
		default:
			last = podState(p)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reader pod %s not running: %s: %w", name, last, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// podState says why a pod does not run yet.
func podState(p *corev1.Pod) string {
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Spec.NodeName != "" {
		parts = append(parts, "on "+p.Spec.NodeName)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, string(c.Type)+": "+c.Message)
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			parts = append(parts, c.Name+" waiting: "+w.Reason+" "+w.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// deletePod deletes the pod at once and waits until the API has it no
// more.
func deletePod(ctx context.Context, pods typedcorev1.PodInterface, name string) error {
	zero := int64(0)
	err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting reader pod %s: %w", name, err)
	}
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reader pod %s still there: %w", name, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// waitUnmounted waits, within ctx, until node mounts pv no more.
func (l *Lab) waitUnmounted(ctx context.Context, node string, pv *corev1.PersistentVolume) {
	h, err := l.nodeHost(node)
	if err != nil {
		return
	}
	for {
		if m, err := volumeMounts(ctx, h, l.kubeletRoot(node), pv); err == nil && len(m) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
