package faults

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindRestart is the kind of Restart faults.
const KindRestart = "restart-service"

// Restart stops service on host and starts it again at inject, so it
// starts under whatever else the scenario holds (a partition from the API
// servers, in a Compound before it); heal starts it if it is down (a
// service that exited after its restart, unable to start without what it
// needs), and does nothing to one that runs. Its probe sees the effect
// while the process that ran before inject is gone: a new process, or
// none at all. A node agent the lab runs as a pod (lab.AgentRunOf) is
// restarted as one is on a cluster: its pod deleted, gracefully, for its
// kubelet to stop and the DaemonSet to make again (a node the API servers
// cannot reach keeps running the old pod); heal has nothing to start, and
// the probe sees the effect once the old pod is gone from the API.
func Restart(host, service string) fault.Fault {
	return &restartService{p: serviceTarget{Host: host, Service: service}}
}

type restartService struct {
	p   serviceTarget
	inj injected
	pod podInjected
}

func (f *restartService) Kind() string            { return KindRestart }
func (f *restartService) Class() fault.Class      { return ClassCrashStop }
func (f *restartService) Params() json.RawMessage { return mustJSON(f.p) }

func (f *restartService) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("restart %s: %w", f.p, err)
	}
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		if err == nil {
			var p agentPod
			p, err = deleteAgentPod(ctx, l, *r)
			f.pod.set(nil, podCgroup{}, p)
		}
		if err != nil {
			return fmt.Errorf("restart %s: %w", f.p, err)
		}
		return nil
	}
	h, st, err := f.p.resolve(ctx, l)
	if err != nil {
		return fmt.Errorf("restart %s: %w", f.p, err)
	}
	if st.State != "running" {
		return fmt.Errorf("restart %s: it is %s: restarting it would show nothing", f.p, st.State)
	}
	f.inj.set(h, st.PID)
	if err := h.StopService(ctx, f.p.Service); err != nil {
		return fmt.Errorf("restart %s: stopping: %w", f.p, err)
	}
	crashpoint.Reach("restart-service/inject/stopped")
	// A start that fails (the service exits at once, unable to start
	// under the scenario's condition) is what the run watches, not an
	// inject error: heal starts it again.
	_ = h.StartService(ctx, f.p.Service)
	return nil
}

func (f *restartService) Heal(ctx context.Context, l lab.Lab) error {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		// The DaemonSet makes the pod again: nothing to start.
		f.pod.clear()
		if err != nil {
			return fmt.Errorf("healing restart %s: %w", f.p, err)
		}
		return nil
	}
	hosts, err := f.p.healHosts(l)
	if err != nil {
		return fmt.Errorf("healing restart %s: %w", f.p, err)
	}
	for _, h := range hosts {
		if err := StartIfDown(ctx, h, f.p.Service); err != nil {
			return fmt.Errorf("healing restart %s: %w", f.p, err)
		}
	}
	f.inj.clear()
	return nil
}

func (f *restartService) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	if r, err := agentPodRun(l, f.p.Host, f.p.Service); err != nil || r != nil {
		if err != nil {
			return fault.Effect{}, err
		}
		_, _, deleted := f.pod.get()
		if deleted.UID == "" {
			return fault.Effect{Detail: fmt.Sprintf("%s on %s runs as a pod; nothing was restarted", f.p.Service, f.p.Host)}, nil
		}
		seen, detail, err := agentPodReplaced(ctx, l, *r, deleted)
		return fault.Effect{Observed: seen, Detail: detail}, err
	}
	h, before, err := f.p.probeHost(ctx, l, &f.inj)
	if err != nil {
		return fault.Effect{}, err
	}
	st, err := ServiceState(ctx, h, f.p.Service)
	if err != nil {
		return fault.Effect{}, err
	}
	if before == 0 {
		return fault.Effect{Detail: fmt.Sprintf("%s on %s is %s (pid %d); nothing was restarted", f.p.Service, h.Name(), st.State, st.PID)}, nil
	}
	return fault.Effect{Observed: st.PID != before,
		Detail: fmt.Sprintf("%s on %s is %s (pid %d; pid %d before the restart)", f.p.Service, h.Name(), st.State, st.PID, before)}, nil
}

func init() {
	register(KindRestart, func(p serviceTarget) fault.Fault { return &restartService{p: p} })
}
