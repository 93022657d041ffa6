package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// podInjected is what a fault on an agent's pod found at inject time, for
// the probe and heal of the process that injected; heal clears it, so the
// null arm sharing the fault value starts from nothing.
type podInjected struct {
	mu   sync.Mutex
	host lab.Host
	cg   podCgroup
	pod  agentPod
}

func (i *podInjected) set(h lab.Host, cg podCgroup, p agentPod) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.host, i.cg, i.pod = h, cg, p
}

func (i *podInjected) get() (lab.Host, podCgroup, agentPod) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.host, i.cg, i.pod
}

func (i *podInjected) clear() { i.set(nil, podCgroup{}, agentPod{}) }

// injectPod freezes every process of the agent's pod through its cgroup,
// after naming the cgroup in the marker of the fault's tag.
func (f *freeze) injectPod(ctx context.Context, l lab.Lab, r *lab.AgentRun, err error) error {
	if err == nil {
		err = f.p.check()
	}
	if err == nil && f.p.Tag == "" {
		err = errors.New("no tag to name the frozen pod's marker by")
	}
	if err != nil {
		return fmt.Errorf("freeze %s: %w", f.p, err)
	}
	_, p, err := runningAgentPod(ctx, l, *r)
	if err != nil {
		return fmt.Errorf("freeze %s: %w", f.p, err)
	}
	h, err := hostByName(l, r.Node)
	if err != nil {
		return fmt.Errorf("freeze %s: %w", f.p, err)
	}
	cg, err := findPodCgroup(ctx, h, p.UID)
	if err != nil {
		return fmt.Errorf("freeze %s (pod %s): %w", f.p, p.Name, err)
	}
	f.pod.set(h, cg, p)
	// The marker first, in a command of its own, so a heal finds what to
	// thaw however soon the inject is cut short (as pod-freeze does).
	if _, err := run(ctx, h, markScript(podFreezeMarker(f.p.Tag), cg)); err != nil {
		return fmt.Errorf("freeze %s (pod %s): %w", f.p, p.Name, err)
	}
	crashpoint.Reach("freeze/inject/pod-marked")
	if _, err := run(ctx, h, freezeScript(cg)); err != nil {
		return fmt.Errorf("freeze %s (pod %s): %w", f.p, p.Name, err)
	}
	if err := waitFrozen(ctx, h, cg, podFreezeWait); err != nil {
		return fmt.Errorf("freeze %s (pod %s): %w", f.p, p.Name, err)
	}
	return nil
}

// healPod thaws what the marker of the fault's tag names on the agent's
// node, where the agent runs as a pod; done is false where it runs as a
// service (heal goes on as for any service). Without a marker there is
// nothing to thaw. The marker goes only after the thaw, so a heal cut
// short between them thaws again.
func (f *freeze) healPod(ctx context.Context, l lab.Lab) (done bool, err error) {
	r, err := agentPodRun(l, f.p.Host, f.p.Service)
	if err != nil {
		return true, fmt.Errorf("healing freeze %s: %w", f.p, err)
	}
	if r == nil {
		return false, nil
	}
	if f.p.Tag != "" {
		if err := checkTag(f.p.Tag); err != nil {
			return true, fmt.Errorf("healing freeze %s: %w", f.p, err)
		}
		h, err := hostByName(l, r.Node)
		if err != nil {
			return true, fmt.Errorf("healing freeze %s: %w", f.p, err)
		}
		marker := podFreezeMarker(f.p.Tag)
		out, err := healRun(ctx, h, thawScript(marker))
		if err != nil {
			return true, fmt.Errorf("healing freeze %s: %w", f.p, err)
		}
		if strings.TrimSpace(out) == "marked" {
			crashpoint.Reach("freeze/heal/pod-thawed")
			if _, err := healRun(ctx, h, dropMarkerScript(marker)); err != nil {
				return true, fmt.Errorf("healing freeze %s: %w", f.p, err)
			}
		}
	}
	f.pod.clear()
	return true, nil
}

// probePod reads the freezer state of the pod's cgroup inject froze, or,
// where nothing was injected (the null arm), of the agent's pod now.
func (f *freeze) probePod(ctx context.Context, l lab.Lab, r *lab.AgentRun, err error) (fault.Effect, error) {
	if err != nil {
		return fault.Effect{}, err
	}
	h, cg, p := f.pod.get()
	if h == nil {
		cs, err := kubeClient(l)
		if err != nil {
			return fault.Effect{}, err
		}
		if p, err = findAgentPod(ctx, cs, *r); err != nil {
			return fault.Effect{}, err
		}
		if h, err = hostByName(l, r.Node); err != nil {
			return fault.Effect{}, err
		}
		if cg, err = findPodCgroup(ctx, h, p.UID); err != nil {
			return fault.Effect{}, err
		}
	}
	frozen, st, err := frozenNow(ctx, h, cg)
	if err != nil {
		return fault.Effect{}, err
	}
	return fault.Effect{Observed: frozen, Detail: fmt.Sprintf("%s's pod %s on %s: cgroup %s: %s", r.Agent, p.Name, h.Name(), cg.Dir, st)}, nil
}
