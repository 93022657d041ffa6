package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindPowerOff is the kind of PowerOff faults.
const KindPowerOff = "power-off"

// PowerOff powers host off hard; heal powers it on.
func PowerOff(host string) fault.Fault { return &powerOff{p: hostParams{Host: host}} }

type hostParams struct {
	Host string `json:"host"`
}

func (p hostParams) check() error {
	if p.Host == "" {
		return errors.New("no host named")
	}
	return nil
}

type powerOff struct{ p hostParams }

func (f *powerOff) Kind() string            { return KindPowerOff }
func (f *powerOff) Class() fault.Class      { return ClassCrashStop }
func (f *powerOff) Params() json.RawMessage { return mustJSON(f.p) }

func (f *powerOff) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("power off: %w", err)
	}
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("power off: %w", err)
	}
	if err := h.PowerOff(ctx); err != nil {
		return fmt.Errorf("power off %s: %w", h.Name(), err)
	}
	return nil
}

// Heal powers the host on unless the lab says it is on already, and then
// starts every service of the host that does not run: a power-on cut short
// (by a crash of the program powering on, or a service that failed to
// start) leaves a host that is on with its services down, which a heal
// that stopped at "on" would take for healed.
func (f *powerOff) Heal(ctx context.Context, l lab.Lab) error {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("healing power off: %w", err)
	}
	power, err := hostPower(ctx, l, h.Name())
	if err != nil || power != "on" {
		if err == nil {
			fault.Found(ctx, "%s: powered %s", h.Name(), power)
		}
		if err := h.PowerOn(ctx); err != nil {
			return fmt.Errorf("healing power off: powering %s on: %w", h.Name(), err)
		}
		fault.Removed(ctx, "%s: powered on", h.Name())
	}
	crashpoint.Reach("power-off/heal/powered-on")
	states, err := h.Services(ctx)
	if err != nil {
		return fmt.Errorf("healing power off: listing %s's services: %w", h.Name(), err)
	}
	for _, st := range states {
		if err := StartIfDown(ctx, h, st.Name); err != nil {
			return fmt.Errorf("healing power off: %w", err)
		}
	}
	return nil
}

// Probe asks the lab for the host's power state and, where the lab cannot
// tell, whether a command still runs on it.
func (f *powerOff) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fault.Effect{}, err
	}
	power, err := hostPower(ctx, l, h.Name())
	if err == nil && (power == "on" || power == "off") {
		return fault.Effect{Observed: power == "off", Detail: fmt.Sprintf("the lab reports %s powered %s", h.Name(), power)}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, rerr := h.Run(rctx, "true"); rerr != nil {
		return fault.Effect{Observed: true, Detail: fmt.Sprintf("%s runs no command: %v", h.Name(), rerr)}, nil
	}
	return fault.Effect{Detail: fmt.Sprintf("%s runs commands (lab power state: %q)", h.Name(), power)}, nil
}

func hostPower(ctx context.Context, l lab.Lab, host string) (string, error) {
	st, err := l.Status(ctx)
	if err != nil {
		return "", err
	}
	for _, hs := range st.Hosts {
		if hs.Name == host {
			return hs.Power, nil
		}
	}
	return "", fmt.Errorf("lab status lists no host %s", host)
}

func init() { register(KindPowerOff, func(p hostParams) fault.Fault { return &powerOff{p: p} }) }
