package selftest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/klog/v2"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/reports"
)

// Environment the driver sets.
const (
	envState     = "FAULTLINE_SELFTEST_STATE"
	envNotALab   = "FAULTLINE_SELFTEST_NOT_A_LAB"
	envLongWait  = "FAULTLINE_SELFTEST_LONG_WINDOW"
	envHealFails = "FAULTLINE_SELFTEST_HEAL_FAILS"
	envNoMarker  = "FAULTLINE_SELFTEST_NO_MARKER"
	// envUnsupported adds a scenario whose fault the lab cannot run.
	envUnsupported = "FAULTLINE_SELFTEST_UNSUPPORTED"
	// envLingering adds a positive control whose damage outlives heal.
	envLingering = "FAULTLINE_SELFTEST_LINGERING"
	// envTwoCopies adds a scenario whose stateful pod already runs on two
	// nodes before the fault, and has Prepare put it there.
	envTwoCopies = "FAULTLINE_SELFTEST_TWO_COPIES"
	// envHazardAtHeal adds a positive control whose breakage falls in heal
	// and in settle.
	envHazardAtHeal = "FAULTLINE_SELFTEST_HAZARD_AT_HEAL"
	// envSeenOnce adds a fault whose effect only the first probe sees.
	envSeenOnce = "FAULTLINE_SELFTEST_SEEN_ONCE"
	// envWide adds a scenario that needs the shape "wide": a memlab whose
	// name starts with "wide".
	envWide = "FAULTLINE_SELFTEST_WIDE"
)

// ClientLineAtVerify is the klog line the suite logs while it checks the
// lab, as client-go would: it belongs in the run folder's client-go.log.
const ClientLineAtVerify = "selftest: a client-go line while the lab is checked"

func TestSelftest(t *testing.T) {
	if os.Getenv(envState) == "" && os.Getenv(scenario.EnvLabs) == "" {
		t.Skip("the self-test suite is run by the scenario package's tests, which set " + envState + " (one memlab) or " + scenario.EnvLabs + " (a pool of memlabs, their state dirs)")
	}
	RegisterFailHandler(Fail)
	scenario.RunSuite(t, "faultline engine self-test")
}

var applicability = invariant.Table{
	{FaultClass: string(memlab.FlagClass), Invariant: "unreachable", Reason: "memlab flags never reach flag z (engineered for the self-test)"},
}

func invariants(flag string) []invariant.Invariant {
	return []invariant.Invariant{
		noFlag{name: "no-flag-" + flag, flag: flag, phase: verdict.Safety},
		noFlag{name: "also-no-flag-" + flag, flag: flag, phase: verdict.Safety},
		noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety},
		darkSource{},
		noFlag{name: "unreachable", flag: "z", phase: verdict.Safety},
		noFlag{name: "no-preexisting", flag: memlab.PreexistingFlag, phase: verdict.Safety},
		noFlag{name: "healed-" + flag, flag: flag, phase: verdict.Convergence},
	}
}

func longWindow() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(envLongWait)); err == nil {
		return d
	}
	return 2 * time.Minute
}

var table = append(scenario.WithNullArms(scenario.Scenario{
	ID:         "selftest-verdicts",
	Title:      "judges every invariant, one of them violated",
	Labels:     []string{"paper:selftest", "ci"},
	Fault:      memlab.Flag{Name: "a"},
	Window:     400 * time.Millisecond,
	Settle:     3 * time.Second,
	Invariants: invariants("a"),
}),
	scenario.Scenario{
		ID:         "selftest-ineffective",
		Title:      "a fault whose effect no probe can see",
		Labels:     []string{"paper:selftest"},
		Fault:      memlab.Flag{Name: "c", Hidden: true},
		Window:     300 * time.Millisecond,
		Settle:     3 * time.Second,
		Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-c", flag: "c", phase: verdict.Convergence}},
	},
	scenario.Scenario{
		ID:         "selftest-inject-fails",
		Title:      "a fault whose inject fails halfway",
		Labels:     []string{"broken"},
		Fault:      memlab.Flag{Name: "f", FailInject: true},
		Window:     300 * time.Millisecond,
		Settle:     3 * time.Second,
		Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-f", flag: "f", phase: verdict.Convergence}},
	},
	scenario.Scenario{
		ID:         "selftest-long-window",
		Title:      "holds its fault for a long window",
		Labels:     []string{"slow"},
		Fault:      memlab.Flag{Name: "w"},
		Window:     longWindow(),
		Settle:     3 * time.Second,
		Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-w", flag: "w", phase: verdict.Convergence}},
	},
)

// healFails is only in the table when asked for: its fault stays in the
// ledger and blocks the next start on the same state directory.
var healFails = scenario.Scenario{
	ID:         "selftest-heal-fails",
	Title:      "a fault that cannot be healed",
	Labels:     []string{"heal-fails"},
	Fault:      memlab.Flag{Name: "h", FailHeal: true},
	Window:     300 * time.Millisecond,
	Settle:     3 * time.Second,
	Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-h", flag: "h", phase: verdict.Convergence}},
}

// unsupported is only in the table when asked for, so that the other
// tests' lists of runs stay as they are.
var unsupported = scenario.Scenario{
	ID:         "selftest-unsupported",
	Title:      "a fault the lab cannot run",
	Labels:     []string{"unsupported"},
	Fault:      memlab.Flag{Name: "u", Unsupported: true},
	Window:     300 * time.Millisecond,
	Settle:     3 * time.Second,
	Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-u", flag: "u", phase: verdict.Convergence}},
}

// lingering is a positive control of a convergence invariant: its flag
// stays set through heal and settling, so healed-l is VIOLATED, and is
// cleared by its release once the run is judged. Only in the table when
// asked for.
var lingering = scenario.Scenario{
	ID:         "selftest-lingering",
	Title:      "a control whose damage outlives heal",
	Labels:     []string{"lingering"},
	Fault:      memlab.LingeringFlag{Name: "l"},
	Window:     300 * time.Millisecond,
	Settle:     time.Second,
	Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-l", flag: "l", phase: verdict.Convergence}},
	ControlOf:  []string{"healed-l"},
}

// twoCopies runs with the stateful pod's container already running on two
// nodes before the fault (Prepare puts it there): the real single-copy
// invariant must find that in the pre-fault window and make its verdict
// DETECTOR_INVALID instead of blaming the fault. Only in the table when
// asked for.
var twoCopies = scenario.Scenario{
	ID:         "selftest-two-copies-before-fault",
	Title:      "the stateful pod runs twice before the fault",
	Labels:     []string{"two-copies"},
	Fault:      memlab.Flag{Name: "d"},
	Window:     300 * time.Millisecond,
	Settle:     3 * time.Second,
	Invariants: []invariant.Invariant{invariant.SingleCopy(), noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-d", flag: "d", phase: verdict.Convergence}},
}

// hazardAtHeal is a positive control of two safety invariants whose
// breakage falls after the window: its heal sets the blip flag for a
// while, and once healed the aftershock flag shows for a while. Both must
// be judged VIOLATED, the one in heal and the other in settle; the
// convergence invariant on the pending flag keeps settling going until
// the aftershock has passed. Only in the table when asked for.
var hazardAtHeal = scenario.Scenario{
	ID:     "selftest-hazard-at-heal",
	Title:  "a control whose breakage falls in heal and in settle",
	Labels: []string{"hazard-at-heal"},
	Fault:  memlab.Flag{Name: "e", BlipAtHeal: "blip", AftershockAfterHeal: "aftershock"},
	Window: 300 * time.Millisecond,
	Settle: 3 * time.Second,
	Invariants: []invariant.Invariant{
		noFlag{name: "no-blip", flag: "blip", phase: verdict.Safety},
		noFlag{name: "no-aftershock", flag: "aftershock", phase: verdict.Safety},
		noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety},
		noFlag{name: "healed-e", flag: "e", phase: verdict.Convergence},
		noFlag{name: "aftershock-passed", flag: "aftershock" + memlab.PendingSuffix, phase: verdict.Convergence},
	},
	ControlOf: []string{"no-blip", "no-aftershock"},
}

// seenOnce is a fault whose effect shows to its first probe only: one
// sighting in a window of ten probes is far below the share a run needs
// to count, so the run is FAULT_INEFFECTIVE. Only in the table when asked
// for.
var seenOnce = scenario.Scenario{
	ID:         "selftest-effect-seen-once",
	Title:      "a fault whose effect only the first probe sees",
	Labels:     []string{"seen-once"},
	Fault:      memlab.Flag{Name: "g", SeenOnce: true},
	Window:     time.Second,
	Settle:     3 * time.Second,
	Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-g", flag: "g", phase: verdict.Convergence}},
}

// wide needs a lab of the shape "wide", which only memlabs named wide…
// have: over a pool whose labs differ in it, the pool is refused before
// anything runs. Only in the table when asked for.
var wide = scenario.Scenario{
	ID:         "selftest-wide",
	Title:      "needs a wide memlab",
	Labels:     []string{"wide"},
	Shape:      scenario.Shape{Name: "wide", Check: checkWide},
	Fault:      memlab.Flag{Name: "v"},
	Window:     300 * time.Millisecond,
	Settle:     3 * time.Second,
	Invariants: []invariant.Invariant{noFlag{name: "no-flag-b", flag: "b", phase: verdict.Safety}, noFlag{name: "healed-v", flag: "v", phase: verdict.Convergence}},
}

func checkWide(l lab.Lab) error {
	if !strings.HasPrefix(l.Info().Name, "wide") {
		return errors.New("it has no wide host (a memlab is wide when its name starts with wide)")
	}
	return nil
}

func fullTable() []scenario.Scenario {
	t := table
	if os.Getenv(envWide) != "" {
		t = append(t, wide)
	}
	if os.Getenv(envHealFails) != "" {
		t = append(t, healFails)
	}
	if os.Getenv(envUnsupported) != "" {
		t = append(t, unsupported)
	}
	if os.Getenv(envLingering) != "" {
		t = append(t, lingering)
	}
	if os.Getenv(envTwoCopies) != "" {
		t = append(t, twoCopies)
	}
	if os.Getenv(envHazardAtHeal) != "" {
		t = append(t, hazardAtHeal)
	}
	if os.Getenv(envSeenOnce) != "" {
		t = append(t, seenOnce)
	}
	return t
}

// prepare puts the stateful pod on two nodes when the two-copies scenario
// is asked for.
func prepare(_ context.Context, l lab.Lab, _ scenario.Scenario) error {
	if os.Getenv(envTwoCopies) == "" {
		return nil
	}
	return l.(*memlab.Lab).Update(func(s *memlab.State) {
		s.Copies = map[string]string{memlab.Nodes[0]: "container-on-w1", memlab.Nodes[1]: "container-on-w2"}
	})
}

var _ = scenario.Register(scenario.Suite{
	Name: "selftest",
	OpenLab: func(context.Context) (lab.Lab, error) {
		return memlab.Open(os.Getenv(envState), os.Getenv(envNotALab) == ""), nil
	},
	// Over a pool ($FAULTLINE_LABS), each entry is a memlab's state dir,
	// and the lab is named after the dir.
	OpenLabEntry: func(_ context.Context, entry string) (lab.Lab, error) {
		return memlab.OpenNamed(entry, filepath.Base(entry), os.Getenv(envNotALab) == ""), nil
	},
	VerifyLab: func(context.Context, lab.Lab) error {
		// A real lab's check is a client's request, and client-go logs
		// through klog while it is made.
		klog.Warning(ClientLineAtVerify)
		if os.Getenv(envNoMarker) != "" {
			return errors.New("the cluster does not carry the lab's marker")
		}
		return nil
	},
	Prepare:       prepare,
	Sampler:       memlab.Sampler{},
	SampleEvery:   100 * time.Millisecond,
	Applicability: applicability,
}, fullTable())
