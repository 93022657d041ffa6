package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// Heal powers the host on unless the lab says it is on already.
func (f *powerOff) Heal(ctx context.Context, l lab.Lab) error {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("healing power off: %w", err)
	}
	if power, err := hostPower(ctx, l, h.Name()); err == nil && power == "on" {
		return nil
	}
	if err := h.PowerOn(ctx); err != nil {
		return fmt.Errorf("healing power off: powering %s on: %w", h.Name(), err)
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
