package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindFreeze is the kind of Freeze faults.
const KindFreeze = "freeze"

// ClassProcessFreeze is a component that stops making progress while it
// stays alive: its sockets stay open, nothing restarts it.
const ClassProcessFreeze fault.Class = "process-freeze"

// Freeze stops service on host with SIGSTOP; heal sends SIGCONT. Only the
// service's main process is stopped: a containerd freeze leaves its shims
// and containers running, which is the gray fault it stands for. A node
// agent the lab runs as a pod (lab.AgentRunOf) is frozen as pod-freeze
// freezes a pod: every process of its pod, by its cgroup on the node,
// named in a marker under the fault's tag; heal thaws it.
func Freeze(host, service string) fault.Fault {
	return &freeze{p: freezeParams{serviceTarget: serviceTarget{Host: host, Service: service}, Tag: newTag()}}
}

// FreezeLeader freezes whichever host leads service at inject time.
func FreezeLeader(service string) fault.Fault {
	return &freeze{p: freezeParams{serviceTarget: serviceTarget{Service: service, Leader: true}}}
}

// freezeParams are a freeze's target and, for an agent that may run as a
// pod, the tag naming the marker of the cgroup frozen.
type freezeParams struct {
	serviceTarget
	Tag string `json:"tag,omitempty"`
}

func (p freezeParams) check() error {
	if err := p.serviceTarget.check(); err != nil {
		return err
	}
	if p.Tag != "" {
		return checkTag(p.Tag)
	}
	return nil
}

type freeze struct {
	p   freezeParams
	inj injected
	pod podInjected
}

func (f *freeze) Kind() string            { return KindFreeze }
func (f *freeze) Class() fault.Class      { return ClassProcessFreeze }
func (f *freeze) Params() json.RawMessage { return mustJSON(f.p) }

func (f *freeze) Inject(ctx context.Context, l lab.Lab) error {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		return f.injectPod(ctx, l, r, err)
	}
	return f.p.signalRunning(ctx, l, &f.inj, "freeze", syscall.SIGSTOP)
}

// Heal sends SIGCONT to the service wherever it has a process; SIGCONT to
// a process that is not stopped changes nothing, so this is idempotent.
func (f *freeze) Heal(ctx context.Context, l lab.Lab) error {
	if done, err := f.healPod(ctx, l); done || err != nil {
		return err
	}
	hosts, err := f.p.healHosts(l)
	if err != nil {
		return fmt.Errorf("healing freeze %s: %w", f.p, err)
	}
	for _, h := range hosts {
		st, err := ServiceState(ctx, h, f.p.Service)
		if err != nil {
			return fmt.Errorf("healing freeze %s: %w", f.p, err)
		}
		if st.PID == 0 || !IsUp(st) {
			crashpoint.Reach("freeze/heal/host")
			continue
		}
		frozen := st.State == "frozen"
		if frozen {
			fault.Found(ctx, "%s: %s pid %d frozen", h.Name(), f.p.Service, st.PID)
		}
		if err := h.Signal(ctx, f.p.Service, syscall.SIGCONT); err != nil {
			return fmt.Errorf("healing freeze %s: SIGCONT to %s on %s: %w", f.p, f.p.Service, h.Name(), err)
		}
		if frozen {
			fault.Removed(ctx, "%s: %s pid %d thawed (SIGCONT)", h.Name(), f.p.Service, st.PID)
		}
		crashpoint.Reach("freeze/heal/host")
	}
	f.inj.clear()
	return nil
}

// Probe reads the state of every thread of the process from /proc on its
// host: the process is frozen only when all of them are T.
func (f *freeze) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		return f.probePod(ctx, l, r, err)
	}
	h, pid, err := f.p.probeHost(ctx, l, &f.inj)
	if err != nil {
		return fault.Effect{}, err
	}
	if pid == 0 {
		st, err := ServiceState(ctx, h, f.p.Service)
		if err != nil {
			return fault.Effect{}, err
		}
		if st.PID == 0 {
			return fault.Effect{Detail: fmt.Sprintf("%s on %s has no process (%s)", f.p.Service, h.Name(), st.State)}, nil
		}
		pid = st.PID
	}
	states, err := threadStates(ctx, h, pid)
	if err != nil {
		return fault.Effect{}, err
	}
	stopped := 0
	for _, s := range states {
		if s == "T" {
			stopped++
		}
	}
	if stopped == len(states) {
		return fault.Effect{Observed: true, Detail: fmt.Sprintf("%s pid %d on %s is in state T in /proc (all %d threads)", f.p.Service, pid, h.Name(), len(states))}, nil
	}
	return fault.Effect{Detail: fmt.Sprintf("%s pid %d on %s: %d of %d threads in state T in /proc (states %v)", f.p.Service, pid, h.Name(), stopped, len(states), states)}, nil
}

func init() { register(KindFreeze, func(p freezeParams) fault.Fault { return &freeze{p: p} }) }
