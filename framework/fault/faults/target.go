package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/faultline/faultline/lab"
)

// serviceTarget names one service on one host, or "the leader" of a
// service that elects one, resolved when the fault is injected.
type serviceTarget struct {
	Host    string `json:"host,omitempty"`
	Service string `json:"service"`
	// Leader resolves the host at inject time: the holder of the
	// service's Lease in kube-system (kube-controller-manager,
	// kube-scheduler), or etcd's raft leader (etcd).
	Leader bool `json:"leader,omitempty"`
}

// leaderRoles are the services that elect a leader, and the role of the
// hosts that run them.
var leaderRoles = map[string]lab.Role{
	lab.ServiceControllerManager: lab.RoleControlPlane,
	lab.ServiceScheduler:         lab.RoleControlPlane,
	lab.ServiceEtcd:              lab.RoleEtcd,
}

func (t serviceTarget) check() error {
	var errs []error
	if t.Service == "" {
		errs = append(errs, errors.New("no service named"))
	}
	switch {
	case t.Leader && t.Host != "":
		errs = append(errs, fmt.Errorf("both host %q and leader given: name one", t.Host))
	case !t.Leader && t.Host == "":
		errs = append(errs, errors.New("no host named (and not the leader)"))
	case t.Leader:
		if _, ok := leaderRoles[t.Service]; !ok && t.Service != "" {
			errs = append(errs, fmt.Errorf("service %q elects no leader (only %s, %s and %s do)", t.Service, lab.ServiceControllerManager, lab.ServiceScheduler, lab.ServiceEtcd))
		}
	}
	return errors.Join(errs...)
}

func (t serviceTarget) String() string {
	if t.Leader {
		return "the " + t.Service + " leader"
	}
	return t.Service + " on " + t.Host
}

// resolve returns the host the service runs on now, after checking the
// host exists and has the service (read-only: nothing is touched).
func (t serviceTarget) resolve(ctx context.Context, l lab.Lab) (lab.Host, lab.ServiceState, error) {
	var h lab.Host
	var err error
	if t.Leader {
		h, err = resolveLeader(ctx, l, t.Service)
	} else {
		h, err = hostByName(l, t.Host)
	}
	if err != nil {
		return nil, lab.ServiceState{}, err
	}
	st, err := ServiceState(ctx, h, t.Service)
	if err != nil {
		return nil, lab.ServiceState{}, err
	}
	return h, st, nil
}

// healHosts are the hosts a heal looks at: the named host, or for a leader
// every host that may run the service, since the leader found at inject
// time is not in the parameters (they were written before it was found).
func (t serviceTarget) healHosts(l lab.Lab) ([]lab.Host, error) {
	if !t.Leader {
		h, err := hostByName(l, t.Host)
		if err != nil {
			return nil, err
		}
		return []lab.Host{h}, nil
	}
	hosts := lab.HostsWithRole(l, leaderRoles[t.Service])
	if len(hosts) == 0 {
		return nil, fmt.Errorf("the lab has no %s host to run %s", leaderRoles[t.Service], t.Service)
	}
	return hosts, nil
}

// injected is what one injection found, kept in memory for the probe of
// the process that injected; Heal clears it, so the null arm of the same
// scenario (which shares the fault value) starts from nothing.
type injected struct {
	mu   sync.Mutex
	host lab.Host
	pid  int
}

func (i *injected) set(h lab.Host, pid int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.host, i.pid = h, pid
}

func (i *injected) get() (lab.Host, int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.host, i.pid
}

func (i *injected) clear() { i.set(nil, 0) }

// probeHost is the host a probe looks at: the one injected into, else the
// target resolved now (the null arm, which injected nothing).
func (t serviceTarget) probeHost(ctx context.Context, l lab.Lab, inj *injected) (lab.Host, int, error) {
	if h, pid := inj.get(); h != nil {
		return h, pid, nil
	}
	h, _, err := t.resolve(ctx, l)
	return h, 0, err
}

// IsUp counts a frozen service as up: it holds its lease and its place,
// and starting it again would fail or start a second one.
func IsUp(st lab.ServiceState) bool { return st.State == "running" || st.State == "frozen" }

// signalRunning resolves the target, refuses one that is not running (a
// signal to it would show nothing), records the host and pid in inj for
// the probe, and sends sig. verb names the fault in errors.
func (t serviceTarget) signalRunning(ctx context.Context, l lab.Lab, inj *injected, verb string, sig syscall.Signal) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("%s %s: %w", verb, t, err)
	}
	h, st, err := t.resolve(ctx, l)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, t, err)
	}
	if st.State != "running" || st.PID == 0 {
		return fmt.Errorf("%s %s: it is %s (pid %d), not running: a signal to it would show nothing", verb, t, st.State, st.PID)
	}
	inj.set(h, st.PID)
	if err := h.Signal(ctx, t.Service, sig); err != nil {
		return fmt.Errorf("%s %s on %s: %w", verb, t.Service, h.Name(), err)
	}
	return nil
}
