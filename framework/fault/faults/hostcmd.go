package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// run runs cmd on h and turns a non-zero exit into an error naming the
// host, the command and what it printed on stderr.
func run(ctx context.Context, h lab.Host, cmd string) (string, error) {
	r, err := h.Run(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("%s: running %q: %w", h.Name(), cmd, err)
	}
	if r.ExitCode != 0 {
		return r.Stdout, fmt.Errorf("%s: %q exited %d: %s", h.Name(), cmd, r.ExitCode, strings.TrimSpace(r.Stderr+" "+r.Stdout))
	}
	return r.Stdout, nil
}

// Prefixes of the lines a heal's command prints about what it found and
// what it removed (healRun).
const (
	foundLine   = "found: "
	removedLine = "removed: "
)

// healRun runs a heal's command on h as run does. The lines it prints
// that begin with "found: " or "removed: " go to the heal's account
// (fault.Found, fault.Removed), each prefixed with the host's name, even
// when the command fails after printing them; the other lines are
// returned.
func healRun(ctx context.Context, h lab.Host, cmd string) (string, error) {
	out, err := run(ctx, h, cmd)
	found, removed, rest := splitHealOutput(out)
	for _, f := range found {
		fault.Found(ctx, "%s: %s", h.Name(), f)
	}
	for _, r := range removed {
		fault.Removed(ctx, "%s: %s", h.Name(), r)
	}
	return rest, err
}

// splitHealOutput takes apart what a heal's command printed: the lines
// saying what it found and what it removed (without their prefixes), and
// the rest, as printed.
func splitHealOutput(out string) (found, removed []string, rest string) {
	var others []string
	for _, line := range strings.SplitAfter(out, "\n") {
		text := strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(text, foundLine):
			found = append(found, strings.TrimPrefix(text, foundLine))
		case strings.HasPrefix(text, removedLine):
			removed = append(removed, strings.TrimPrefix(text, removedLine))
		default:
			others = append(others, line)
		}
	}
	return found, removed, strings.Join(others, "")
}

// script joins commands so the first failing one stops the rest.
func script(cmds []string) string { return strings.Join(cmds, " && ") }

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hostByName returns the lab's host or an error naming the unknown host.
func hostByName(l lab.Lab, name string) (lab.Host, error) {
	h, err := l.Host(name)
	if err != nil {
		return nil, fmt.Errorf("host %q: %w", name, err)
	}
	return h, nil
}

// ServiceState returns the named service's state on h, or an error naming
// the services h has when it has no such service.
func ServiceState(ctx context.Context, h lab.Host, service string) (lab.ServiceState, error) {
	states, err := h.Services(ctx)
	if err != nil {
		return lab.ServiceState{}, fmt.Errorf("%s: listing services: %w", h.Name(), err)
	}
	var names []string
	for _, s := range states {
		if s.Name == service {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return lab.ServiceState{}, fmt.Errorf("%s has no service %q (it has %v)", h.Name(), service, names)
}

// threadStates reads the state letter of every thread of pid from
// /proc/<pid>/task/*/stat on h ("T" stopped, "S" sleeping, "R" running,
// ...). Every thread is read because kill(SIGSTOP) returns before all of a
// process's threads have stopped: one still running can answer a request.
func threadStates(ctx context.Context, h lab.Host, pid int) ([]string, error) {
	out, err := run(ctx, h, "cat /proc/"+strconv.Itoa(pid)+"/task/*/stat")
	if err != nil {
		return nil, err
	}
	var states []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		st, err := parseProcStatState(line)
		if err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	if len(states) == 0 {
		return nil, fmt.Errorf("%s: no threads listed for pid %d", h.Name(), pid)
	}
	return states, nil
}

// parseProcStatState returns the state field of one /proc stat line. The
// comm field may hold spaces and parentheses, so the state is what follows
// the last ')'.

func parseProcStatState(stat string) (string, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return "", fmt.Errorf("malformed /proc stat line %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	if len(fields) == 0 {
		return "", fmt.Errorf("malformed /proc stat line %q: no state", stat)
	}
	return fields[0], nil
}
