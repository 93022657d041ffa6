package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindClockSkew is the kind of ClockSkew faults.
const KindClockSkew = "clock-skew"

// ClassClockSkew is a host whose wall clock disagrees with the others'.
const ClassClockSkew fault.Class = "clock-skew"

// minProbedSkew is the smallest skew the probe can tell from the time an
// SSH round trip takes.
const minProbedSkew = 2 * time.Second

// timeSyncServices are the time-sync daemons a skew stops (the active
// ones) and heal starts again.
var timeSyncServices = []string{"chrony", "chronyd", "systemd-timesyncd", "ntp", "ntpd", "ntpsec", "openntpd"}

type clockSkewParams struct {
	Host string `json:"host"`
	// Offset is added to the host's wall clock (negative: back in time).
	Offset string `json:"offset"`
	Tag    string `json:"tag"`
}

func (p clockSkewParams) check() error {
	var errs []error
	if p.Host == "" {
		errs = append(errs, errors.New("no host named"))
	}
	if d, err := time.ParseDuration(p.Offset); err != nil {
		errs = append(errs, fmt.Errorf("offset %q: %w", p.Offset, err))
	} else if d.Abs() < minProbedSkew {
		errs = append(errs, fmt.Errorf("offset %s is under %s, which the effect probe cannot tell from an SSH round trip", d, minProbedSkew))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p clockSkewParams) offset() time.Duration { d, _ := time.ParseDuration(p.Offset); return d }

// ClockSkew steps host's wall clock by offset after stopping its time-sync
// daemons; heal steps it back and starts them again. A marker directory on
// the host (in /run) records what inject did, so heal undoes it exactly
// once however often it runs.
//
// On a lab whose hosts share one wall clock but which can shift, process
// by process, the clock every process of a host reads
// (lab.ProcessClockSkewer: the local lab), inject has the lab do that and
// heal has it undo it; the run records the emulation (fault.Emulated) and
// the probe reads the components' own clocks.
func ClockSkew(host string, offset time.Duration) fault.Fault {
	return &clockSkew{p: clockSkewParams{Host: host, Offset: offset.String(), Tag: newTag()}}
}

type clockSkew struct{ p clockSkewParams }

var _ fault.Emulated = (*clockSkew)(nil)

func (f *clockSkew) Kind() string            { return KindClockSkew }
func (f *clockSkew) Class() fault.Class      { return ClassClockSkew }
func (f *clockSkew) Params() json.RawMessage { return mustJSON(f.p) }
func (f *clockSkew) marker() string          { return "/run/faultline-clock-" + f.p.Tag }

func (f *clockSkew) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("clock skew: %w", err)
	}
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("clock skew: %w", err)
	}
	if ps, ok := l.(lab.ProcessClockSkewer); ok {
		if err := ps.SkewProcesses(ctx, h.Name(), f.p.offset()); err != nil {
			return fmt.Errorf("clock skew on %s: %w", h.Name(), err)
		}
		return nil
	}
	if shared, why := lab.SharesWallClock(l); shared {
		return lab.Unsupported(l.Info().Kind, "clock skew", why+", and the lab cannot shift one host's processes instead")
	}
	if _, err := run(ctx, h, skewScript(f.marker(), f.p.offset())); err != nil {
		return fmt.Errorf("clock skew on %s: %w", h.Name(), err)
	}
	return nil
}

// stepScript sets the wall clock to now + delta, to the nanosecond.
func stepScript(delta time.Duration) string {
	return fmt.Sprintf(`n=$(( $(date +%%s%%N) + (%d) )); date -s "@$(( n / 1000000000 )).$(printf %%09d $(( n %% 1000000000 )))" >/dev/null`, delta.Nanoseconds())
}

func skewScript(marker string, offset time.Duration) string {
	return script([]string{
		"mkdir " + marker,
		"for s in " + strings.Join(timeSyncServices, " ") + "; do if systemctl is-active --quiet \"$s\" 2>/dev/null; then echo \"$s\" >> " + marker + "/stopped-sync; systemctl stop \"$s\" || exit 1; fi; done",
		stepScript(offset),
		"touch " + marker + "/stepped",
	})
}

// healSkewScript steps the clock back only if inject stepped it and heal
// has not yet, starts the daemons inject stopped, asks chrony (if there)
// to step to true time, and removes the marker.
func healSkewScript(marker string, offset time.Duration) string {
	return "if [ -d " + marker + " ]; then echo '" + foundLine + "marker " + marker + "'; " + script([]string{
		"if [ -e " + marker + "/stepped ]; then echo '" + foundLine + "the clock stepped by " + offset.String() + "'; " + stepScript(-offset) + " && rm " + marker + "/stepped && echo '" + removedLine + "the step (stepped back by " + offset.String() + ")'; fi",
		"if [ -e " + marker + "/stopped-sync ]; then for s in $(cat " + marker + "/stopped-sync); do echo \"" + foundLine + "$s stopped\"; systemctl start \"$s\" || exit 1; echo \"" + removedLine + "$s stopped (started again)\"; done; fi",
		"{ chronyc -a makestep >/dev/null 2>&1 || true; }",
		"rm -rf " + marker,
		"echo '" + removedLine + "marker " + marker + "'",
	}) + "; fi"
}

func (f *clockSkew) Heal(ctx context.Context, l lab.Lab) error {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("healing clock skew: %w", err)
	}
	if ps, ok := l.(lab.ProcessClockSkewer); ok {
		// What the heal finds is read from the components' own clocks
		// (the lab does not say which processes it shifts); a skew only
		// some processes still had, or a host none of whose components
		// answered, shows as less than was there.
		skewed := noteSkewedComponents(ctx, l, h)
		if err := ps.UnskewProcesses(ctx, h.Name()); err != nil {
			return fmt.Errorf("healing clock skew on %s: %w", h.Name(), err)
		}
		if skewed {
			fault.Removed(ctx, "%s: the skew of its processes' clocks (the lab set every shifted process back)", h.Name())
		}
		return nil
	}
	if shared, _ := lab.SharesWallClock(l); shared {
		return nil // inject never changes anything there
	}
	if _, err := healRun(ctx, h, healSkewScript(f.marker(), f.p.offset())); err != nil {
		return fmt.Errorf("healing clock skew on %s: %w", h.Name(), err)
	}
	return nil
}

// noteSkewedComponents notes in the heal's account every component of h
// whose clock is more than minProbedSkew/2 off this program's (the Date
// header's one-second resolution and the round trip stay below it), and
// says whether it found one. Without an account in ctx nothing is read.
func noteSkewedComponents(ctx context.Context, l lab.Lab, h lab.Host) bool {
	if !fault.Accounting(ctx) {
		return false
	}
	clocks, _, err := componentClocks(ctx, l, h)
	if err != nil {
		return false
	}
	var skewed []string
	for _, c := range clocks {
		if c.skew.Abs() > minProbedSkew/2 {
			skewed = append(skewed, fmt.Sprintf("%s %+.0fs", c.service, c.skew.Seconds()))
		}
	}
	if len(skewed) == 0 {
		return false
	}
	fault.Found(ctx, "%s: clocks skewed: %s", h.Name(), strings.Join(skewed, ", "))
	return true
}

// Emulation is the lab's account of its per-process skew, where the lab
// emulates one; empty where inject steps the host's clock.
func (f *clockSkew) Emulation(l lab.Lab) string {
	if ps, ok := l.(lab.ProcessClockSkewer); ok {
		return ps.ProcessSkewEmulation()
	}
	return ""
}

// Probe compares the host's wall clock with this program's, read halfway
// through the round trip: the skew is seen when they differ by more than
// half the offset, in the offset's direction. Where the lab shifts the
// host's processes rather than its clock, `date` would start a fresh
// process, so the probe reads instead the Date header every component's
// HTTP endpoint stamps from its own clock, and sees the skew when every
// component that answered shows it.
func (f *clockSkew) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fault.Effect{}, err
	}
	want := f.p.offset()
	if _, ok := l.(lab.ProcessClockSkewer); ok {
		clocks, unread, err := componentClocks(ctx, l, h)
		if err != nil {
			return fault.Effect{}, err
		}
		var behind []string
		for _, c := range clocks {
			if !skewSeen(c.skew, want) {
				behind = append(behind, c.service)
			}
		}
		detail := fmt.Sprintf("%s's components' clocks against this program's (HTTP Date headers): %s; skew asked %s", h.Name(), describeClocks(clocks, unread), want)
		if len(behind) > 0 {
			detail += fmt.Sprintf("; not skewed: %s", strings.Join(behind, ", "))
		}
		return fault.Effect{Observed: len(behind) == 0, Detail: detail}, nil
	}
	before := time.Now()
	out, err := run(ctx, h, "date +%s%N")
	after := time.Now()
	if err != nil {
		return fault.Effect{}, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		return fault.Effect{}, fmt.Errorf("%s: reading its clock: %q: %w", h.Name(), out, err)
	}
	mid := before.Add(after.Sub(before) / 2)
	skew := time.Unix(0, ns).Sub(mid)
	observed := skewSeen(skew, want)
	return fault.Effect{Observed: observed, Detail: fmt.Sprintf("%s's clock is %s off this program's (round trip %s; skew asked %s)", h.Name(), skew.Round(time.Millisecond), after.Sub(before).Round(time.Millisecond), want)}, nil
}

func init() {
	register(KindClockSkew, func(p clockSkewParams) fault.Fault { return &clockSkew{p: p} })
}
