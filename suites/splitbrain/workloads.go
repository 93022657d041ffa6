package splitbrain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab"
)

// Workload names one of the suite's data workloads; a scenario names the
// ones it runs by its labels ("workload:ledger").
type Workload string

// The workloads.
const (
	// WorkloadLedger is the append-only log on a volume (fixtures/ledgerlog).
	WorkloadLedger Workload = "ledger"
	// WorkloadKVDB is the bbolt database on a volume (fixtures/kvdb).
	WorkloadKVDB Workload = "kvdb"
	// WorkloadElector is the leader-elected writer to the external store
	// (fixtures/electorlog).
	WorkloadElector Workload = "elector"
)

// LabelWorkload prefixes the label that names a scenario's workload.
const LabelWorkload = "workload:"

// An Install is what an installer is given.
type Install struct {
	// Labels are the scenario's (a workload may read its own, such as
	// the elector's fencing:).
	Labels []string
	// Class is the StorageClass of the workload's volume, from the
	// scenario's volume: label (empty for a workload with none).
	Class string
	Lab   lab.Lab
	// Info is the lab's storage.
	Info    lab.StorageInfo
	Timeout time.Duration
}

// An Installer installs one workload and returns once it runs as the
// scenarios expect.
type Installer func(ctx context.Context, cs kubernetes.Interface, in Install) error

// installers are the workloads' installers, by name.
var installers = map[Workload]Installer{
	WorkloadLedger: onVolume(func(in Install) (*appsv1.StatefulSet, error) {
		mode, err := LedgerModeOf(in.Labels)
		if err != nil {
			return nil, err
		}
		return LedgerStatefulSet(in.Class, in.Info.HistoryEndpoints, mode), nil
	}),
	WorkloadKVDB: onVolume(func(in Install) (*appsv1.StatefulSet, error) {
		return KVDBStatefulSet(in.Class, in.Info.HistoryEndpoints), nil
	}),
	WorkloadElector: installElector,
}

// onVolume installs the StatefulSet sts makes, on a claim of the
// scenario's class.
func onVolume(sts func(Install) (*appsv1.StatefulSet, error)) Installer {
	return func(ctx context.Context, cs kubernetes.Interface, in Install) error {
		if in.Class == "" {
			return errors.New("the workload stores on a volume, and the scenario names no volume: label")
		}
		set, err := sts(in)
		if err != nil {
			return err
		}
		return InstallStatefulSet(ctx, cs, set, in.Timeout)
	}
}

// InstallerOf is w's installer.
func InstallerOf(w Workload) (Installer, bool) {
	in, ok := installers[w]
	return in, ok
}

// WorkloadsOf are the workloads labels name, in label order: an error
// when they name none or one the suite does not have.
func WorkloadsOf(labels []string) ([]Workload, error) {
	var out []Workload
	for _, l := range labels {
		name, ok := strings.CutPrefix(l, LabelWorkload)
		if !ok {
			continue
		}
		w := Workload(name)
		if _, ok := installers[w]; !ok {
			known := make([]string, 0, len(installers))
			for k := range installers {
				known = append(known, string(k))
			}
			sort.Strings(known)
			return nil, fmt.Errorf("label %q names no workload of the suite (it has %s)", l, strings.Join(known, ", "))
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s label names a workload", LabelWorkload)
	}
	return out, nil
}

// LabelVolume prefixes the label that names the kind of volume a
// scenario's workloads store on ("volume:block").
const LabelVolume = "volume:"

// VolumeOf is the kind of volume labels name (their first volume: label:
// "shared", "block", "block-mmp", "block-fenced"), empty when they name
// none.
func VolumeOf(labels []string) string {
	for _, l := range labels {
		if kind, ok := strings.CutPrefix(l, LabelVolume); ok {
			return kind
		}
	}
	return ""
}

// runUse is what a run uses of the suite, as its labels name it (the
// sampler hands the readers the run, sampler.Env.Run): its workloads and
// its kind of volume. The readers ask only the run's workloads'
// questions, so a workload a run does not run is not asked (and not
// judged) rather than unreadable.
type runUse struct {
	workloads map[Workload]bool
	volume    string
}

// useOf is what the run of labels uses: every workload a workload: label
// names (the suite's Prepare refuses a run that names none or one the
// suite does not have, so nothing is sampled for it) and its volume:
// label's kind.
func useOf(labels []string) runUse {
	u := runUse{workloads: map[Workload]bool{}, volume: VolumeOf(labels)}
	for _, l := range labels {
		if name, ok := strings.CutPrefix(l, LabelWorkload); ok {
			u.workloads[Workload(name)] = true
		}
	}
	return u
}

// runs is whether the run runs w.
func (u runUse) runs(w Workload) bool { return u.workloads[w] }

// StorageEmulation is what a scenario's run says the lab's storage
// emulates (Scenario.Emulation): every line of the lab's Emulated, and
// first, for a scenario on the fenced block class (label
// volume:block-fenced), that the run's fence is the lab's emulation of
// one (StorageInfo.FenceEmulation), not a storage array's: its verdicts
// show what that fence does.
func StorageEmulation(labels []string) func(lab.Lab) string {
	fenced := false
	for _, l := range labels {
		if l == "volume:block-fenced" {
			fenced = true
		}
	}
	return func(l lab.Lab) string {
		sd, ok := l.(lab.StoredData)
		if !ok {
			return ""
		}
		info, err := sd.StorageInfo()
		if err != nil {
			return ""
		}
		var parts []string
		if fenced && info.FenceEmulation != "" {
			parts = append(parts, "fence emulated: this run's fence is the emulation's, not a storage array's revocation of the node's access: "+info.FenceEmulation)
		}
		if len(info.Emulated) > 0 {
			parts = append(parts, "storage emulated: "+strings.Join(info.Emulated, "; "))
		}
		return strings.Join(parts, "; ")
	}
}
