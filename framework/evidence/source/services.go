package source

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// Timeline kinds a Services reader stamps: a process of a service was
// replaced by another (a restart), stopped running, or started.
const (
	KindComponentRestarted = "component-restarted"
	KindComponentStopped   = "component-stopped"
	KindComponentStarted   = "component-started"
)

// Services reads some of a host's services as its lab reports them
// (lab.Host.Services: pid, state, start time, restarts) and answers them
// as an evidence.ServicesValue. Between two reads it notes every process
// that stopped, started or was replaced, for the timeline (Events).
type Services struct {
	name     evidence.Source
	host     lab.Host
	question evidence.Question
	services []string

	mu     sync.Mutex
	last   map[string]lab.ServiceState
	events []evidence.Event
}

// NewServices makes a reader named name that answers q with the services
// of host named in services, in the order the lab lists them.
func NewServices(name evidence.Source, host lab.Host, q evidence.Question, services ...string) *Services {
	return &Services{name: name, host: host, question: q, services: services, last: map[string]lab.ServiceState{}}
}

func (s *Services) Source() evidence.Source        { return s.name }
func (s *Services) Questions() []evidence.Question { return []evidence.Question{s.question} }

func (s *Services) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	svcs, err := s.host.Services(ctx)
	at := now()
	if err != nil {
		return map[evidence.Question]evidence.Answer{s.question: evidence.UnreadableAnswer(Reason(err), at)}
	}
	v := evidence.ServicesValue{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range svcs {
		if !slices.Contains(s.services, st.Name) {
			continue
		}
		v.Services = append(v.Services, st)
		if e, ok := s.transition(st, at); ok {
			s.events = append(s.events, e)
		}
	}
	return map[evidence.Question]evidence.Answer{s.question: answer(v, at, "")}
}

// transition compares st with the previous read of its service.
func (s *Services) transition(st lab.ServiceState, at time.Time) (evidence.Event, bool) {
	key := s.host.Name() + "/" + st.Name
	prev, seen := s.last[st.Name]
	s.last[st.Name] = st
	if !seen {
		return evidence.Event{}, false
	}
	e := evidence.Event{At: at, Source: s.name, Subject: "process/" + key}
	up, wasUp := st.State == "running", prev.State == "running"
	switch {
	case wasUp && up && prev.PID != st.PID:
		e.Kind, e.Detail = KindComponentRestarted, fmt.Sprintf("pid %d → %d", prev.PID, st.PID)
	case wasUp && !up:
		e.Kind, e.Detail = KindComponentStopped, fmt.Sprintf("pid %d is %s", prev.PID, st.State)
	case !wasUp && up:
		e.Kind, e.Detail = KindComponentStarted, fmt.Sprintf("pid %d (was %s)", st.PID, prev.State)
	default:
		return evidence.Event{}, false
	}
	return e, true
}

// Events returns the transitions noted since the previous call.
func (s *Services) Events(context.Context) []evidence.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.events
	s.events = nil
	return out
}
