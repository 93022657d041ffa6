package faults

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindStopService is the kind of StopService faults.
const KindStopService = "stop-service"

// StopService stops service on host the way its supervisor does (systemctl
// stop on VMs, SIGTERM then SIGKILL on the local lab); heal starts it. A
// node agent the lab runs as a pod cannot be kept down (its kubelet and
// DaemonSet start it again): inject refuses it as unsupported.
func StopService(host, service string) fault.Fault {
	return &stopService{p: serviceTarget{Host: host, Service: service}}
}

// StopLeader stops whichever host leads service when the fault is injected.
func StopLeader(service string) fault.Fault {
	return &stopService{p: serviceTarget{Service: service, Leader: true}}
}

type stopService struct {
	p   serviceTarget
	inj injected
}

func (f *stopService) Kind() string            { return KindStopService }
func (f *stopService) Class() fault.Class      { return ClassCrashStop }
func (f *stopService) Params() json.RawMessage { return mustJSON(f.p) }

func (f *stopService) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("stop %s: %w", f.p, err)
	}
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		if err == nil {
			err = agentPodStopUnsupported(l, *r)
		}
		return fmt.Errorf("stop %s: %w", f.p, err)
	}
	h, st, err := f.p.resolve(ctx, l)
	if err != nil {
		return fmt.Errorf("stop %s: %w", f.p, err)
	}
	if !IsUp(st) {
		return fmt.Errorf("stop %s: it is already %s: stopping it would show nothing", f.p, st.State)
	}
	f.inj.set(h, st.PID)
	if err := h.StopService(ctx, f.p.Service); err != nil {
		return fmt.Errorf("stop %s on %s: %w", f.p.Service, h.Name(), err)
	}
	return nil
}

func (f *stopService) Heal(ctx context.Context, l lab.Lab) error {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err == nil && r != nil {
		// Inject refuses a pod agent: nothing can be stopped.
		return nil
	}
	hosts, err := f.p.healHosts(l)
	if err != nil {
		return fmt.Errorf("healing stop %s: %w", f.p, err)
	}
	for _, h := range hosts {
		if err := StartIfDown(ctx, h, f.p.Service); err != nil {
			return fmt.Errorf("healing stop %s: %w", f.p, err)
		}
	}
	f.inj.clear()
	return nil
}

// Probe sees the service not running on the host it was stopped on.
func (f *stopService) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	h, _, err := f.p.probeHost(ctx, l, &f.inj)
	if err != nil {
		return fault.Effect{}, err
	}
	st, err := ServiceState(ctx, h, f.p.Service)
	if err != nil {
		return fault.Effect{}, err
	}
	return fault.Effect{Observed: !IsUp(st), Detail: fmt.Sprintf("%s on %s is %s (pid %d)", f.p.Service, h.Name(), st.State, st.PID)}, nil
}

func init() {
	register(KindStopService, func(p serviceTarget) fault.Fault { return &stopService{p: p} })
}
