package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindKill is the kind of Kill faults.
const KindKill = "kill"

// ClassCrashStop is a component that stops at once, as a crash does.
const ClassCrashStop fault.Class = "crash-stop"

// Kill sends SIGKILL to service on host; heal starts it again if nothing
// (a supervisor, systemd) has. A node agent the lab runs as a pod
// (lab.AgentRunOf) is killed as a crash kills a container: SIGKILL to
// every process of its container, which its kubelet then starts again in
// the same pod; heal has nothing to start.
func Kill(host, service string) fault.Fault {
	return &kill{p: serviceTarget{Host: host, Service: service}}
}

// KillLeader kills whichever host leads service (kube-controller-manager,
// kube-scheduler, etcd) when the fault is injected.
func KillLeader(service string) fault.Fault {
	return &kill{p: serviceTarget{Service: service, Leader: true}}
}

type kill struct {
	p   serviceTarget
	inj injected
	pod podInjected
}

func (f *kill) Kind() string            { return KindKill }
func (f *kill) Class() fault.Class      { return ClassCrashStop }
func (f *kill) Params() json.RawMessage { return mustJSON(f.p) }

func (f *kill) Inject(ctx context.Context, l lab.Lab) error {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		if err == nil {
			var p agentPod
			p, err = killAgentPod(ctx, l, *r)
			f.pod.set(nil, podCgroup{}, p)
		}
		if err != nil {
			return fmt.Errorf("kill %s: %w", f.p, err)
		}
		return nil
	}
	return f.p.signalRunning(ctx, l, &f.inj, "kill", syscall.SIGKILL)
}

func (f *kill) Heal(ctx context.Context, l lab.Lab) error {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		// The kubelet starts the container again: nothing to start.
		f.pod.clear()
		if err != nil {
			return fmt.Errorf("healing kill %s: %w", f.p, err)
		}
		return nil
	}
	hosts, err := f.p.healHosts(l)
	if err != nil {
		return fmt.Errorf("healing kill %s: %w", f.p, err)
	}
	for _, h := range hosts {
		if err := StartIfDown(ctx, h, f.p.Service); err != nil {
			return fmt.Errorf("healing kill %s: %w", f.p, err)
		}
	}
	f.inj.clear()
	return nil
}

// Probe sees the kill when the service is down, or runs under another pid
// than the one killed (restarted by its supervisor).
func (f *kill) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		if err != nil {
			return fault.Effect{}, err
		}
		_, _, killed := f.pod.get()
		seen, detail, err := agentPodKillSeen(ctx, l, *r, killed)
		return fault.Effect{Observed: seen, Detail: detail}, err
	}
	h, killed, err := f.p.probeHost(ctx, l, &f.inj)
	if err != nil {
		return fault.Effect{}, err
	}
	st, err := ServiceState(ctx, h, f.p.Service)
	if err != nil {
		return fault.Effect{}, err
	}
	switch {
	case !IsUp(st):
		return fault.Effect{Observed: true, Detail: fmt.Sprintf("%s on %s is %s", f.p.Service, h.Name(), st.State)}, nil
	case killed != 0 && st.PID != killed:
		return fault.Effect{Observed: true, Detail: fmt.Sprintf("%s on %s runs as pid %d, not the killed pid %d: it was restarted", f.p.Service, h.Name(), st.PID, killed)}, nil
	}
	return fault.Effect{Detail: fmt.Sprintf("%s on %s is %s as pid %d", f.p.Service, h.Name(), st.State, st.PID)}, nil
}

// StartIfDown starts service on h unless it runs (or is frozen), and notes
// in the heal's account what it found and did (fault.Found, Removed).
func StartIfDown(ctx context.Context, h lab.Host, service string) error {
	st, err := ServiceState(ctx, h, service)
	if err != nil {
		return err
	}
	if IsUp(st) {
		return nil
	}
	fault.Found(ctx, "%s: %s %s", h.Name(), service, st.State)
	if err := h.StartService(ctx, service); err != nil {
		return fmt.Errorf("starting %s on %s: %w", service, h.Name(), err)
	}
	fault.Removed(ctx, "%s: %s started again", h.Name(), service)
	return nil
}

func init() { register(KindKill, func(p serviceTarget) fault.Fault { return &kill{p: p} }) }
