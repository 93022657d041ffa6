package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindPinAgents is the kind of PinAgents faults.
const KindPinAgents = "pin-agents"

// ClassAgentConfig is a node agent's configuration changed under it.
const ClassAgentConfig fault.Class = "agent-config"

type pinAgentsParams struct {
	// Node is the host whose agents are pinned.
	Node string `json:"node"`
	// Server is the control-plane host whose API server they are pinned
	// to.
	Server string `json:"server"`
	// Agents are the services pinned (kube-proxy, the policy agent).
	Agents []string `json:"agents"`
	Tag    string   `json:"tag"`
}

func (p pinAgentsParams) check() error {
	var errs []error
	if p.Node == "" || !nodeNamePattern.MatchString(p.Node) {
		errs = append(errs, fmt.Errorf("node %q is not a host name", p.Node))
	}
	if p.Server == "" || !nodeNamePattern.MatchString(p.Server) {
		errs = append(errs, fmt.Errorf("server %q is not a host name", p.Server))
	}
	if len(p.Agents) == 0 {
		errs = append(errs, errors.New("no agent to pin"))
	}
	seen := map[string]bool{}
	for _, a := range p.Agents {
		if seen[a] {
			errs = append(errs, fmt.Errorf("agent %s named twice", a))
		}
		seen[a] = true
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PinAgents points node's agents (services such as lab.ServiceKubeProxy
// and lab.ServicePolicyAgent) at the API server on the control-plane host
// server alone, instead of the lab's usual address, and restarts them so
// they read it: their lists and watches then go to that one server,
// whatever happens to it. For an agent run as a service the lab must say
// where its kubeconfig is (lab.AgentKubeconfigs): inject keeps each
// original beside it under the fault's tag and rewrites only the
// kubeconfig's server; heal puts the original back and restarts the agent,
// and with no kept original there is nothing to heal. An agent the lab
// runs as a pod reads its configuration from the cluster, one for every
// node: it is pinned by its node's own rules instead (pinpods.go). As a fault it changes nothing the cluster records; it
// is the condition of a scenario whose fault acts on that one server
// (Compound), and that scenario's null arm's decoy.
func PinAgents(node, server string, agents ...string) fault.Fault {
	return &pinAgents{p: pinAgentsParams{Node: node, Server: server, Agents: agents, Tag: newTag()}}
}

type pinAgents struct{ p pinAgentsParams }

func (f *pinAgents) Kind() string            { return KindPinAgents }
func (f *pinAgents) Class() fault.Class      { return ClassAgentConfig }
func (f *pinAgents) Params() json.RawMessage { return mustJSON(f.p) }

// pinned is one agent's kubeconfig and where its original is kept.
type pinned struct {
	agent, config, original string
}

// pinTargets is what a pin acts on: the agents that read a kubeconfig
// file on the node (rewritten), and those the lab runs as pods (pinned
// by the node's rules, pinpods.go).
type pinTargets struct {
	node, server lab.Host
	url          string // the server's API address, https://<address>:<port>
	files        []pinned
	pods         []lab.AgentRun
}

func (f *pinAgents) targets(l lab.Lab) (pinTargets, error) {
	node, err := hostByName(l, f.p.Node)
	if err != nil {
		return pinTargets{}, err
	}
	server, err := hostByName(l, f.p.Server)
	if err != nil {
		return pinTargets{}, err
	}
	if !server.HasRole(lab.RoleControlPlane) {
		return pinTargets{}, fmt.Errorf("%s is not a control-plane host: it runs no API server", f.p.Server)
	}
	t := pinTargets{node: node, server: server, url: "https://" + net.JoinHostPort(server.Address(), strconv.Itoa(apiServerPort(l)))}
	kcs, hasFiles := l.(lab.AgentKubeconfigs)
	for _, a := range f.p.Agents {
		r, err := agentPodRun(l, f.p.Node, a)
		if err != nil {
			return pinTargets{}, err
		}
		if r != nil {
			t.pods = append(t.pods, *r)
			continue
		}
		if !hasFiles {
			return pinTargets{}, lab.Unsupported(l.Info().Kind, "pin agents", "the lab does not say where its node agents' kubeconfigs are (lab.AgentKubeconfigs)")
		}
		path, err := kcs.AgentKubeconfig(f.p.Node, a)
		if err != nil {
			return pinTargets{}, err
		}
		t.files = append(t.files, pinned{agent: a, config: path, original: path + ".faultline-" + f.p.Tag + ".orig"})
	}
	return t, nil
}

func (f *pinAgents) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("pin agents: %w", err)
	}
	t, err := f.targets(l)
	if err != nil {
		return fmt.Errorf("pin agents: %w", err)
	}
	for _, a := range t.files {
		if _, err := ServiceState(ctx, t.node, a.agent); err != nil {
			return fmt.Errorf("pin agents: %w", err)
		}
	}
	if len(t.pods) > 0 {
		if err := f.injectPods(ctx, l, t); err != nil {
			return fmt.Errorf("pin agents: %w", err)
		}
	}
	for _, a := range t.files {
		if _, err := run(ctx, t.node, pinScript(a, t.url)); err != nil {
			return fmt.Errorf("pin agents: %s's kubeconfig: %w", a.agent, err)
		}
		if err := restart(ctx, t.node, a.agent); err != nil {
			return fmt.Errorf("pin agents: %w", err)
		}
		crashpoint.Reach("pin-agents/inject/agent")
	}
	return nil
}

// pinScript keeps the original (noclobber: never over a copy another
// inject kept) and writes the kubeconfig again with its server lines
// alone changed, in one rename, then checks the server is the one asked.
func pinScript(a pinned, url string) string {
	o, c, n := shellQuote(a.original), shellQuote(a.config), shellQuote(a.config+".faultline-new")
	return script([]string{
		"set -o noclobber",
		"[ ! -e " + o + " ]",
		"cp -p " + c + " " + o,
		"cp -p " + c + " " + n,
		"sed -E 's#^([[:space:]]*server:[[:space:]]*).*$#\\1" + url + "#' " + o + " >| " + n,
		"mv -f " + n + " " + c,
		"grep -q -F " + shellQuote("server: "+url) + " " + c,
	})
}

// restoreKubeconfigScript writes the kept original back over the agent's
// kubeconfig (a copy made beside it, then one rename, so the agent never
// reads half a file) and prints "kept" when there was a kept original; the
// original stays kept until the agent has restarted (dropKeptScript). It
// prints what it found and removed (healRun).
func restoreKubeconfigScript(a pinned) string {
	o, c, n := shellQuote(a.original), shellQuote(a.config), shellQuote(a.config+".faultline-new")
	return fmt.Sprintf(`if [ -e %[3]s ]; then echo "%[4]s%[6]s"; rm -f %[3]s || exit 1; echo "%[5]s%[6]s"; fi; `+
		`if [ -e %[1]s ]; then echo "%[4]s%[7]s's original kubeconfig kept as %[8]s"; `+
		`if ! cmp -s %[1]s %[2]s; then cp -p %[1]s %[3]s && mv -f %[3]s %[2]s || exit 1; echo "%[5]s%[7]s's pinned kubeconfig %[9]s, the original copied back over it"; fi; echo kept; fi`,
		o, c, n, foundLine, removedLine, a.config+".faultline-new", a.agent, a.original, a.config)
}

// dropKeptScript removes the kept original once the agent runs on it.
func dropKeptScript(a pinned) string {
	return fmt.Sprintf(`rm -f %[1]s && echo "%[2]s%[3]s, the kept copy"`, shellQuote(a.original), removedLine, a.original)
}

func restart(ctx context.Context, h lab.Host, service string) error {
	if err := h.StopService(ctx, service); err != nil {
		return fmt.Errorf("restarting %s on %s: %w", service, h.Name(), err)
	}
	if err := h.StartService(ctx, service); err != nil {
		return fmt.Errorf("restarting %s on %s: %w", service, h.Name(), err)
	}
	return nil
}

func (f *pinAgents) Heal(ctx context.Context, l lab.Lab) error {
	t, err := f.targets(l)
	if errors.Is(err, lab.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("healing pin agents: %w", err)
	}
	var errs []error
	if len(t.pods) > 0 {
		errs = append(errs, f.healPods(ctx, t))
	}
	for _, a := range t.files {
		out, err := healRun(ctx, t.node, restoreKubeconfigScript(a))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSpace(out) != "kept" {
			continue
		}
		crashpoint.Reach("pin-agents/heal/restored")
		// The agent read the pinned file when it started: only a restart
		// makes it read the original. The kept copy goes last, so a heal
		// cut short before it is done again in full.
		if err := restart(ctx, t.node, a.agent); err != nil {
			errs = append(errs, err)
			continue
		}
		fault.Removed(ctx, "%s: %s restarted on its original kubeconfig", t.node.Name(), a.agent)
		if _, err := healRun(ctx, t.node, dropKeptScript(a)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("healing pin agents: %w", err)
	}
	return nil
}

// Probe sees every agent's kubeconfig naming the server, and the agent
// running with a connection open to that server's address; for an agent
// run as a pod, the node's rules there and the agent's connection ending
// at the server (probePods).
func (f *pinAgents) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	t, err := f.targets(l)
	if err != nil {
		return fault.Effect{}, err
	}
	hostPort := strings.TrimPrefix(t.url, "https://")
	observed := true
	var details []string
	for _, a := range t.files {
		st, err := ServiceState(ctx, t.node, a.agent)
		if err != nil {
			return fault.Effect{}, err
		}
		out, err := run(ctx, t.node, fmt.Sprintf("grep -c -F %s %s; ss -Htnp state established dst %s", shellQuote("server: "+t.url), shellQuote(a.config), hostPort))
		if err != nil {
			return fault.Effect{}, err
		}
		lines := strings.SplitN(out, "\n", 2)
		inFile := strings.TrimSpace(lines[0]) != "" && strings.TrimSpace(lines[0]) != "0"
		connected := st.PID != 0 && len(lines) > 1 && strings.Contains(lines[1], fmt.Sprintf("pid=%d,", st.PID))
		observed = observed && inFile && connected
		details = append(details, fmt.Sprintf("%s (pid %d, %s): kubeconfig names %s: %v; connected to it: %v", a.agent, st.PID, st.State, t.url, inFile, connected))
	}
	if len(t.pods) > 0 {
		seen, detail, err := f.probePods(ctx, l, t)
		if err != nil {
			return fault.Effect{}, err
		}
		observed = observed && seen
		details = append(details, detail)
	}
	return fault.Effect{Observed: observed, Detail: f.p.Node + ": " + strings.Join(details, "; ")}, nil
}

func init() {
	register(KindPinAgents, func(p pinAgentsParams) fault.Fault { return &pinAgents{p: p} })
}
