package scenario

import (
	"context"
	"fmt"
	"io"

	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// The engine: what one suite process shares across its runs (the suite,
// its lab, the provenance every record carries), and the checks it makes
// of a lab before anything touches it.

// engine is what one suite process shares across its runs: the suite, its
// lab and the provenance every record carries.
type engine struct {
	name    string
	cfg     Suite
	lab     lab.Lab
	labInfo verdict.LabInfo
	// entry is the lab of a pool this engine runs on (Suite.OpenLabEntry
	// opens it); "" for a suite run on one lab (Suite.OpenLab).
	entry      string
	commit     string
	configHash string
	// out gets a line of progress per step; nil discards.
	out io.Writer
}

func (e *engine) logf(format string, args ...any) {
	if e.out != nil {
		fmt.Fprintf(e.out, format+"\n", args...)
	}
}

// open opens the lab once and refuses, before anything touches it, a
// config that is not a lab, a lab without the suite's shape, and one
// VerifyLab refuses.
func (e *engine) open(ctx context.Context) error {
	if e.lab != nil {
		return nil
	}
	var l lab.Lab
	var err error
	if e.entry != "" {
		l, err = e.cfg.OpenLabEntry(ctx, e.entry)
	} else {
		l, err = e.cfg.OpenLab(ctx)
	}
	if err != nil {
		return fmt.Errorf("opening the lab: %v", err)
	}
	if err := RefuseNonLab(l); err != nil {
		l.Close()
		return err
	}
	if err := e.cfg.Shape.check(l); err != nil {
		l.Close()
		return fmt.Errorf("refusing to run: %v (nothing was touched)", err)
	}
	if e.cfg.VerifyLab != nil {
		if err := e.cfg.VerifyLab(ctx, l); err != nil {
			l.Close()
			return fmt.Errorf("lab %s: refusing to run: %v (nothing was touched)", l.Info().Name, err)
		}
	}
	info := l.Info()
	e.labInfo = verdict.LabInfo{
		Name: info.Name, Kind: info.Kind, Topology: info.Topology, ResetKind: string(info.ResetKind),
		KubernetesVersion: info.KubernetesVersion, EtcdVersion: info.EtcdVersion,
		TimerProfile: info.TimerProfile, Timers: info.Timers,
	}
	if e.commit, e.configHash, err = provenance(ctx, l); err != nil {
		l.Close()
		return err
	}
	e.lab = l
	return nil
}

// healLedger heals whatever the lab's heal ledger holds (a run killed
// after inject left it there), and refuses to go on if it cannot, or if a
// live process holds a fault on the lab.
func (e *engine) healLedger(ctx context.Context) (ledger.Report, error) {
	rep, err := ledger.HealAll(ctx, e.lab)
	if err != nil {
		return rep, fmt.Errorf("healing what the heal ledger of lab %s holds before the suite: %v\n%s", e.lab.Info().Name, err, rep)
	}
	if len(rep.Busy) > 0 {
		return rep, fmt.Errorf("lab %s has faults held by another running process; two runs on one lab would judge each other's faults:\n%s", e.lab.Info().Name, rep)
	}
	return rep, nil
}

// fits says why the lab cannot run sc (its topology or shape), or nil.
func (e *engine) fits(sc Scenario) error {
	info := e.lab.Info()
	if sc.Topology != "" && info.Topology != sc.Topology {
		return fmt.Errorf("scenario %s needs topology %s; lab %s is %s", sc.ID, sc.Topology, info.Name, info.Topology)
	}
	if err := sc.Shape.check(e.lab); err != nil {
		return fmt.Errorf("scenario %s: %w", sc.ID, err)
	}
	return nil
}
