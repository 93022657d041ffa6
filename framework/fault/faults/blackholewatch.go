package faults

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindBlackholeWatch is the kind of BlackholeWatch faults.
const KindBlackholeWatch = "blackhole-watch"

// ClassGrayAgent is an agent that keeps reporting healthy while it no
// longer hears what it needs.
const ClassGrayAgent fault.Class = "gray-agent"

// How long inject and heal wait for every API server to apply a changed
// authorization configuration. The API server watches the file (inotify)
// and also polls it once a minute, so this covers a missed event.
const authzReloadTimeout = 150 * time.Second

type blackholeWatchParams struct {
	// Node is the host whose kubelet stops hearing about its pods; its
	// node name is its host name.
	Node string `json:"node"`
	// Agent, when set, is the node agent (a service name: kube-proxy, the
	// policy agent) refused instead of the kubelet, as the identity the lab
	// gives it on Node (lab.AgentIdentities), for the list and watch of
	// Resources.
	Agent     string            `json:"agent,omitempty"`
	Resources []WatchedResource `json:"resources,omitempty"`
	// ServiceAccount, when set ("namespace/name"), is refused instead of
	// a node's component: the identity of a workload's pods (CoreDNS),
	// whose connections to the API servers are closed from the servers'
	// side, found by PodSelector in the account's namespace.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	PodSelector    string `json:"podSelector,omitempty"`
	Tag            string `json:"tag"`
	// ConfigPath is the authorization configuration file on every
	// control-plane host; empty means the lab says where
	// (lab.AuthorizationConfigFiles).
	ConfigPath string `json:"configPath,omitempty"`
}

// nodeNamePattern is a DNS-1123 subdomain: the names a Node can have, and
// the only ones put into the match condition's string literal.
var nodeNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func (p blackholeWatchParams) check() error {
	var errs []error
	switch {
	case p.ServiceAccount != "":
		ns, name, ok := strings.Cut(p.ServiceAccount, "/")
		if !ok || !nodeNamePattern.MatchString(ns) || !nodeNamePattern.MatchString(name) {
			errs = append(errs, fmt.Errorf("service account %q is not namespace/name", p.ServiceAccount))
		}
		if p.Node != "" || p.Agent != "" {
			errs = append(errs, errors.New("a service account and a node or agent named: name one"))
		}
		if p.PodSelector == "" || !podSelectorPattern.MatchString(p.PodSelector) {
			errs = append(errs, fmt.Errorf("pod selector %q is not key=value", p.PodSelector))
		}
		if len(p.Resources) == 0 {
			errs = append(errs, fmt.Errorf("service account %s: no resources to refuse it the watch of", p.ServiceAccount))
		}
	case p.Node == "":
		errs = append(errs, errors.New("no node named"))
	case len(p.Node) > 253 || !nodeNamePattern.MatchString(p.Node):
		errs = append(errs, fmt.Errorf("node %q is not a valid node name (a DNS-1123 subdomain)", p.Node))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	if p.Agent != "" && len(p.Resources) == 0 {
		errs = append(errs, fmt.Errorf("agent %s: no resources to refuse it the watch of", p.Agent))
	}
	if p.Agent == "" && p.ServiceAccount == "" && len(p.Resources) > 0 {
		errs = append(errs, errors.New("resources named without an agent: the kubelet's blackhole refuses its pods only"))
	}
	for _, r := range p.Resources {
		if !resourceNamePattern.MatchString(r.Resource) || (r.Group != "" && !nodeNamePattern.MatchString(r.Group)) {
			errs = append(errs, fmt.Errorf("resource %q in group %q is not a resource name", r.Resource, r.Group))
		}
	}
	if p.ConfigPath != "" && (!path.IsAbs(p.ConfigPath) || path.Clean(p.ConfigPath) != p.ConfigPath) {
		errs = append(errs, fmt.Errorf("config path %q is not a clean absolute path", p.ConfigPath))
	}
	return errors.Join(errs...)
}

// WatchedResource is a resource an agent lists and watches ("" group for
// the core API).
type WatchedResource struct {
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource"`
}

// podSelectorPattern is one label equality (key=value), the only selector
// put into a request.
var podSelectorPattern = regexp.MustCompile(`^[a-z0-9A-Z]([-a-zA-Z0-9_./]*[a-zA-Z0-9])?=[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`)

// resourceNamePattern is a resource's plural name.
var resourceNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// BlackholeAgentWatch makes the API servers refuse node's agent (a
// service name, such as lab.ServicePolicyAgent) the list and watch of
// resources, and nothing else, as BlackholeWatch does the kubelet's pods:
// the agent keeps its connection and its health while it no longer hears
// of changes. The lab must give the agent an identity of its own on node
// (lab.AgentIdentities).
func BlackholeAgentWatch(node, agent string, resources ...WatchedResource) fault.Fault {
	return &blackholeWatch{p: blackholeWatchParams{Node: node, Agent: agent, Resources: resources, Tag: newTag()}}
}

// BlackholeServiceAccountWatch makes the API servers refuse the service
// account ("namespace/name") the list and watch of resources, and nothing
// else, as BlackholeAgentWatch does a node agent: for a workload that
// runs in pods (CoreDNS), whose connections to the API servers live in
// the pods' network namespaces. Once every server applied the change,
// each server closes its own end of the connections from the pods the
// selector (key=value, in the account's namespace) finds, so their
// watches are made again, and refused.
func BlackholeServiceAccountWatch(serviceAccount, podSelector string, resources ...WatchedResource) fault.Fault {
	return &blackholeWatch{p: blackholeWatchParams{ServiceAccount: serviceAccount, PodSelector: podSelector, Resources: resources, Tag: newTag()}}
}

// BlackholeWatch makes the API servers refuse node's kubelet the list and
// watch of its pods, and nothing else: its node status, lease, pod status
// updates and reads of single objects go through, so the node stays Ready
// while it no longer hears of pods bound to it or deleted from it.
//
// Every control-plane host's API server must read its authorizers from a
// structured authorization configuration file; the fault puts first in it
// a webhook authorizer whose match condition selects exactly
// system:node:<node>'s list and watch of pods, whose endpoint refuses
// connections and whose failure policy is Deny. The API server fails
// closed: those requests end with 500 Internal Server Error naming the
// unreachable webhook (a SubjectAccessReview reports them denied with
// that evaluation error). Once every API server has applied the file, the
// node's connections to the API servers are closed (ss -K) so its open
// pod watch is made again, and refused. Heal puts back the original file
// (kept on each host under the fault's tag) and waits until every API
// server has applied it.
func BlackholeWatch(node string) fault.Fault {
	return &blackholeWatch{p: blackholeWatchParams{Node: node, Tag: newTag()}}
}

// BlackholeWatchAt is BlackholeWatch for a lab that does not say where its
// API servers' authorization configuration is: configPath is that file on
// every control-plane host.
func BlackholeWatchAt(node, configPath string) fault.Fault {
	return &blackholeWatch{p: blackholeWatchParams{Node: node, Tag: newTag(), ConfigPath: configPath}}
}

type blackholeWatch struct{ p blackholeWatchParams }

func (f *blackholeWatch) Kind() string            { return KindBlackholeWatch }
func (f *blackholeWatch) Class() fault.Class      { return ClassGrayAgent }
func (f *blackholeWatch) Params() json.RawMessage { return mustJSON(f.p) }

// authorizerName names the webhook in the configuration, so a file that
// still holds it is known to be this fault's.
func (f *blackholeWatch) authorizerName() string {
	return "faultline-blackhole-watch-" + f.p.Tag
}

// apiServerHost is one control-plane host and the files the fault touches
// on it: the configuration, the copy of the original and the webhook's
// kubeconfig, both named by the tag.
type apiServerHost struct {
	host       lab.Host
	config     string
	original   string
	kubeconfig string
}

func (f *blackholeWatch) apiServerHosts(l lab.Lab) ([]apiServerHost, error) {
	hosts := lab.HostsWithRole(l, lab.RoleControlPlane)
	if len(hosts) == 0 {
		return nil, fmt.Errorf("lab %s has no control-plane host", l.Info().Name)
	}
	files, ok := l.(lab.AuthorizationConfigFiles)
	if f.p.ConfigPath == "" && !ok {
		return nil, lab.Unsupported(l.Info().Kind, "blackhole watch", "the lab does not say where its API servers' authorization configuration is (lab.AuthorizationConfigFiles); name the file with BlackholeWatchAt on a cluster whose API servers run with --authorization-config")
	}
	var out []apiServerHost
	for _, h := range hosts {
		conf := f.p.ConfigPath
		if conf == "" {
			var err error
			if conf, err = files.AuthorizationConfigFile(h.Name()); err != nil {
				return nil, fmt.Errorf("finding the authorization configuration of %s: %w", h.Name(), err)
			}
		}
		out = append(out, apiServerHost{
			host:       h,
			config:     conf,
			original:   conf + ".faultline-" + f.p.Tag + ".orig",
			kubeconfig: path.Join(path.Dir(conf), "faultline-"+f.p.Tag+"-refused-webhook.kubeconfig"),
		})
	}
	return out, nil
}

// nodeHost checks the node is a host of the lab that runs a kubelet
// (or the agent refused).
func (f *blackholeWatch) nodeHost(ctx context.Context, l lab.Lab) (lab.Host, error) {
	h, err := hostByName(l, f.p.Node)
	if err != nil {
		return nil, err
	}
	svc := lab.ServiceKubelet
	if f.p.Agent != "" {
		svc = f.p.Agent
		r, err := agentPodRun(l, f.p.Node, f.p.Agent)
		if err != nil {
			return nil, err
		}
		if r != nil {
			// A pod: refused() finds it through the API servers.
			return h, nil
		}
	}
	if _, err := ServiceState(ctx, h, svc); err != nil {
		return nil, err
	}
	return h, nil
}

// refused is who is refused what: the kubelet's pods, or the agent's
// resources as the identity the lab gives it, or, for an agent run as a
// pod, as its service account on its node (podAgentIdentity).
func (f *blackholeWatch) refused(ctx context.Context, l lab.Lab) (lab.Identity, []WatchedResource, error) {
	if f.p.ServiceAccount != "" {
		ns, name, _ := strings.Cut(f.p.ServiceAccount, "/")
		return lab.Identity{User: "system:serviceaccount:" + ns + ":" + name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}, f.p.Resources, nil
	}
	if f.p.Agent == "" {
		return lab.Identity{User: "system:node:" + f.p.Node, Groups: []string{"system:nodes", "system:authenticated"}},
			[]WatchedResource{{Resource: "pods"}}, nil
	}
	if r, err := agentPodRun(l, f.p.Node, f.p.Agent); err != nil || r != nil {
		if err != nil {
			return lab.Identity{}, nil, err
		}
		cs, err := kubeClient(l)
		if err != nil {
			return lab.Identity{}, nil, err
		}
		id, _, err := podAgentIdentity(ctx, cs, *r)
		if err != nil {
			return lab.Identity{}, nil, err
		}
		return id, f.p.Resources, nil
	}
	ids, ok := l.(lab.AgentIdentities)
	if !ok {
		return lab.Identity{}, nil, lab.Unsupported(l.Info().Kind, "blackhole watch of an agent", "the lab does not say who its node agents authenticate as (lab.AgentIdentities)")
	}
	id, err := ids.AgentIdentity(f.p.Node, f.p.Agent)
	if err != nil {
		return lab.Identity{}, nil, err
	}
	if err := checkIdentity(id); err != nil {
		return lab.Identity{}, nil, fmt.Errorf("the lab names %s's %s: %w", f.p.Node, f.p.Agent, err)
	}
	return id, f.p.Resources, nil
}

func (f *blackholeWatch) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("blackhole watch: %w", err)
	}
	var node lab.Host
	if f.p.ServiceAccount == "" {
		var err error
		if node, err = f.nodeHost(ctx, l); err != nil {
			return fmt.Errorf("blackhole watch: %w", err)
		}
	}
	id, resources, err := f.refused(ctx, l)
	if err != nil {
		return fmt.Errorf("blackhole watch: %w", err)
	}
	servers, err := f.apiServerHosts(l)
	if err != nil {
		return fmt.Errorf("blackhole watch: %w", err)
	}
	// Everything is read and checked on every host before any is changed.
	rendered := make([][]byte, len(servers))
	for i, s := range servers {
		if rendered[i], err = f.prepare(ctx, s, id, resources); err != nil {
			return fmt.Errorf("blackhole watch on %s: %w", s.host.Name(), err)
		}
	}
	for i, s := range servers {
		if _, err := run(ctx, s.host, installAuthzScript(s, rendered[i])); err != nil {
			return fmt.Errorf("blackhole watch on %s: %w", s.host.Name(), err)
		}
		crashpoint.Reach("blackhole-watch/inject/host")
	}
	for i, s := range servers {
		if err := waitConfigApplied(ctx, l, s.host, configHash(rendered[i])); err != nil {
			return fmt.Errorf("blackhole watch: %w", err)
		}
	}
	crashpoint.Reach("blackhole-watch/inject/applied")
	if f.p.ServiceAccount != "" {
		return f.closeFromServers(ctx, l, servers)
	}
	// The pod watch kubelet holds open was allowed when it was made; only
	// a watch made again meets the new authorizer. An agent in a pod of
	// the host's network namespace that reads the in-cluster
	// configuration dials the kubernetes Service's address instead.
	filter := fmt.Sprintf("( dport = :%d )", apiServerPort(l))
	if f.p.Agent != "" {
		if svc, err := kubernetesServiceAddress(ctx, l); err != nil {
			return fmt.Errorf("blackhole watch: %w", err)
		} else if svc != "" {
			filter = fmt.Sprintf("( dport = :%d ) or ( dst %s )", apiServerPort(l), svc)
		}
	}
	if _, err := run(ctx, node, closeConnectionsScript(filter)); err != nil {
		return fmt.Errorf("blackhole watch: closing %s's connections to the API servers: %w", node.Name(), err)
	}
	return nil
}

// closeFromServers closes, on every API server's host, the server's end
// of each connection from a pod the selector finds, so the pods' open
// watches are made again and meet the new authorizer.
func (f *blackholeWatch) closeFromServers(ctx context.Context, l lab.Lab, servers []apiServerHost) error {
	kc, err := apiServerClient(l, servers[0].host, nil)
	if err != nil {
		return fmt.Errorf("blackhole watch: %w", err)
	}
	ns, _, _ := strings.Cut(f.p.ServiceAccount, "/")
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: f.p.PodSelector})
	if err != nil {
		return fmt.Errorf("blackhole watch: finding the pods of %s (%s): %w", f.p.ServiceAccount, f.p.PodSelector, err)
	}
	var ips []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			ips = append(ips, p.Status.PodIP)
		}
	}
	if len(ips) == 0 {
		return fmt.Errorf("blackhole watch: no pod of %s with an address matches %s", f.p.ServiceAccount, f.p.PodSelector)
	}
	port := apiServerPort(l)
	for _, s := range servers {
		for _, ip := range ips {
			if _, err := run(ctx, s.host, closeConnectionsScript(fmt.Sprintf("( sport = :%d ) and ( dst %s )", port, ip))); err != nil {
				return fmt.Errorf("blackhole watch: closing %s's connections from %s: %w", s.host.Name(), ip, err)
			}
		}
	}
	return nil
}

// prepare reads the host's configuration and returns it with the denying
// webhook put first, after checking nothing of the fault is there yet and
// nothing serves the port the webhook is sent to.
func (f *blackholeWatch) prepare(ctx context.Context, s apiServerHost, id lab.Identity, resources []WatchedResource) ([]byte, error) {
	st, err := ServiceState(ctx, s.host, lab.ServiceAPIServer)
	if err != nil {
		return nil, err
	}
	if st.State != "running" {
		return nil, fmt.Errorf("its API server is %s: it could not apply the change", st.State)
	}
	out, err := run(ctx, s.host, fmt.Sprintf("if [ -e %s ]; then echo present; fi; base64 -w0 < %s", shellQuote(s.original), shellQuote(s.config)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.config, err)
	}
	if strings.HasPrefix(out, "present\n") {
		return nil, fmt.Errorf("%s exists: this fault was injected and not healed", s.original)
	}
	original, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.config, err)
	}
	rendered, err := renderDenyWatchConfig(original, f.authorizerName(), id, resources, s.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.config, err)
	}
	listening, err := run(ctx, s.host, fmt.Sprintf("ss -Hltn 'sport = :%d'", refusedWebhookPort))
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(listening) != "" {
		return nil, fmt.Errorf("something listens on port %d, where the denying webhook must find nobody: %s", refusedWebhookPort, strings.TrimSpace(listening))
	}
	return rendered, nil
}

// installAuthzScript keeps the original (cp -p: its mode, owner and times
// too), writes the webhook's kubeconfig, then replaces the configuration
// in one rename of a file made from the original, so the API server never
// reads half a file and the file keeps its mode and owner.
func installAuthzScript(s apiServerHost, rendered []byte) string {
	tmp := s.config + ".faultline-new"
	return script([]string{
		// noclobber: the kept original and the kubeconfig are never
		// written over, so a fault never adopts files it did not write.
		"set -o noclobber",
		"[ ! -e " + shellQuote(s.original) + " ]",
		"cp -p " + shellQuote(s.config) + " " + shellQuote(s.original),
		"printf %s " + shellQuote(base64.StdEncoding.EncodeToString([]byte(refusedWebhookKubeconfig()))) + " | base64 -d > " + shellQuote(s.kubeconfig),
		"cp -p " + shellQuote(s.config) + " " + shellQuote(tmp),
		"printf %s " + shellQuote(base64.StdEncoding.EncodeToString(rendered)) + " | base64 -d >| " + shellQuote(tmp),
		"mv -f " + shellQuote(tmp) + " " + shellQuote(s.config),
	})
}

// healAuthzScript puts the original back where inject kept it. With no
// copy, a configuration that still names the fault's authorizer cannot be
// restored and is an error; otherwise there is nothing to heal. It prints
// what it found and removed (healRun), then the hash of the configuration
// the API server must now apply.
func healAuthzScript(s apiServerHost, authorizerName string) string {
	o, c, k, n := shellQuote(s.original), shellQuote(s.config), shellQuote(s.kubeconfig), shellQuote(s.config+".faultline-new")
	return fmt.Sprintf(`if [ -e %[1]s ]; then echo "%[6]sthe original authorization configuration kept as %[7]s"; mv -f %[1]s %[2]s || exit 1; echo "%[9]s%[8]s, the original moved back over it"; `+
		`elif grep -q -F %[4]s %[2]s; then echo "%[2]s holds %[4]s but the original (%[1]s) is gone" >&2; exit 1; fi; `+
		`for x in %[3]s %[5]s; do if [ -e "$x" ]; then echo "%[6]s$x"; rm -f "$x" || exit 1; echo "%[9]s$x"; fi; done; sha256sum < %[2]s`,
		o, c, k, shellQuote(authorizerName), n, foundLine, s.original, s.config, removedLine)
}

// closeAPIConnectionsScript closes every TCP connection of the host to an
// API server port, so its clients connect again, and fails if one of them
// is still open afterwards (ss -K does nothing, silently, on a kernel
// without CONFIG_INET_DIAG_DESTROY). Nothing is left behind: ss -K acts
// once, on the sockets that exist now.
func closeAPIConnectionsScript(port int) string {
	return closeConnectionsScript(fmt.Sprintf("( dport = :%d )", port))
}

// closeConnectionsScript closes the host's established TCP connections
// that the ss filter selects and checks that none of those it closed is
// still open. Clients dial again at once, and their new connections are
// not the old ones, so only the closed pairs of addresses are compared.
func closeConnectionsScript(filter string) string {
	list := fmt.Sprintf("ss -Htn state established '%s' | awk '{print $3, $4}' | sort", filter)
	body := fmt.Sprintf(`before=$(%[1]s); ss -K state established '%[2]s' >/dev/null || exit 1; `+
		`left=$(comm -12 <(echo "$before") <(%[1]s)); `+
		`if [ -n "$before" ] && [ -n "$left" ]; then echo "still open after ss -K: $left" >&2; exit 1; fi`, list, filter)
	return "bash -c " + shellQuote(body)
}

func apiServerPort(l lab.Lab) int {
	if p := l.Config().Network.APIServerPort; p != 0 {
		return p
	}
	return 6443
}

func (f *blackholeWatch) Heal(ctx context.Context, l lab.Lab) error {
	servers, err := f.apiServerHosts(l)
	if errors.Is(err, lab.ErrUnsupported) {
		// Inject refuses such a lab the same way: nothing can be there.
		return nil
	}
	if err != nil {
		return fmt.Errorf("healing blackhole watch: %w", err)
	}
	var errs []error
	for _, s := range servers {
		out, err := healRun(ctx, s.host, healAuthzScript(s, f.authorizerName()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sum := strings.Fields(out)
		if len(sum) == 0 {
			errs = append(errs, fmt.Errorf("%s: no hash of %s", s.host.Name(), s.config))
			continue
		}
		st, err := ServiceState(ctx, s.host, lab.ServiceAPIServer)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.State != "running" {
			// A stopped server reads the file when it starts; a frozen
			// one cannot be waited for.
			continue
		}
		if err := waitConfigApplied(ctx, l, s.host, "sha256:"+sum[0]); err != nil {
			errs = append(errs, err)
		}
		crashpoint.Reach("blackhole-watch/heal/host")
	}
	if len(errs) > 0 {
		return fmt.Errorf("healing blackhole watch: %w", errors.Join(errs...))
	}
	return nil
}

// apiServerClient is an admin client of the API server on h alone,
// acting as as when it is not empty (impersonation).
func apiServerClient(l lab.Lab, h lab.Host, as *rest.ImpersonationConfig) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig(h.Name())
	if err != nil {
		return nil, fmt.Errorf("getting a kubeconfig for the API server on %s: %w", h.Name(), err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	cfg.Timeout = 10 * time.Second
	if as != nil {
		cfg.Impersonate = *as
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client from %s: %w", path, err)
	}
	return cs, nil
}

// waitConfigApplied waits until the API server on h reports it applied
// the authorization configuration whose hash is want.
func waitConfigApplied(ctx context.Context, l lab.Lab, h lab.Host, want string) error {
	kc, err := apiServerClient(l, h, nil)
	if err != nil {
		return err
	}
	var last string
	err = lab.WaitFor(ctx, "the API server on "+h.Name()+" to apply authorization configuration "+want, authzReloadTimeout, time.Second, func(ctx context.Context) (bool, error) {
		raw, err := kc.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("reading its /metrics: %w", err)
		}
		last, err = parseLastConfigHash(string(raw))
		return last == want, err
	})
	if err != nil {
		return fmt.Errorf("%w (it reports %s applied)", err, last)
	}
	return nil
}

// Probe makes, on every API server, the requests the refused component
// makes, as that component (impersonating its identity): the effect is
// there when every server refuses the list of what it watches for
// authorization and lets through what the fault must not touch (the
// kubelet's dry-run patch of its node status; for an agent, a get of its
// node, which every node agent reads and the fault does not select).
func (f *blackholeWatch) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	hosts := lab.HostsWithRole(l, lab.RoleControlPlane)
	if len(hosts) == 0 {
		return fault.Effect{}, fmt.Errorf("lab %s has no control-plane host", l.Info().Name)
	}
	id, resources, err := f.refused(ctx, l)
	if err != nil {
		return fault.Effect{}, err
	}
	as := &rest.ImpersonationConfig{UserName: id.User, Groups: id.Groups, Extra: id.Extra}
	// An agent run as a pod is asked for with a token bound to its pod,
	// as its own is: the node name is then the API server's reading of
	// the token, not the prober's claim.
	var token string
	if r, err := agentPodRun(l, f.p.Node, f.p.Agent); err != nil {
		return fault.Effect{}, err
	} else if f.p.Agent != "" && r != nil {
		cs, err := kubeClient(l)
		if err != nil {
			return fault.Effect{}, err
		}
		if _, token, err = podAgentIdentity(ctx, cs, *r); err != nil {
			return fault.Effect{}, err
		}
	}
	observed := true
	var details []string
	for _, h := range hosts {
		var kc kubernetes.Interface
		if token != "" {
			kc, err = apiServerTokenClient(l, h, token)
		} else {
			kc, err = apiServerClient(l, h, as)
		}
		if err != nil {
			return fault.Effect{}, err
		}
		if f.p.Agent == "" && f.p.ServiceAccount == "" {
			list, refused, err := listOwnPods(ctx, kc, f.p.Node)
			if err != nil {
				return fault.Effect{}, fmt.Errorf("asking the API server on %s: %w", h.Name(), err)
			}
			status, err := patchOwnStatus(ctx, kc, f.p.Node)
			if err != nil {
				return fault.Effect{}, fmt.Errorf("asking the API server on %s: %w", h.Name(), err)
			}
			if !refused || status != "" {
				observed = false
			}
			if status == "" {
				status = "accepted"
			}
			details = append(details, fmt.Sprintf("%s: list of its pods %s; dry-run patch of its node status %s", h.Name(), list, status))
			continue
		}
		var parts []string
		for _, r := range resources {
			list, refused, err := listResource(ctx, kc, r)
			if err != nil {
				return fault.Effect{}, fmt.Errorf("asking the API server on %s: %w", h.Name(), err)
			}
			observed = observed && refused
			parts = append(parts, fmt.Sprintf("list of %s %s", r, list))
		}
		if f.p.ServiceAccount != "" {
			// Namespaces are read by the workload too and not selected.
			other, refused, err := listResource(ctx, kc, WatchedResource{Resource: "namespaces"})
			if err != nil {
				return fault.Effect{}, fmt.Errorf("asking the API server on %s: %w", h.Name(), err)
			}
			observed = observed && !refused
			details = append(details, fmt.Sprintf("%s: %s; list of namespaces %s", h.Name(), strings.Join(parts, ", "), other))
			continue
		}
		get, allowed := getOwnNode(ctx, kc, f.p.Node)
		observed = observed && allowed
		details = append(details, fmt.Sprintf("%s: %s; get of its node %s", h.Name(), strings.Join(parts, ", "), get))
	}
	who := id.User
	if nodes, ok := id.Extra[NodeNameExtra]; ok {
		who += " with a token bound to its pod on " + strings.Join(nodes, ",")
	}
	return fault.Effect{Observed: observed, Detail: "as " + who + " — " + strings.Join(details, "; ")}, nil
}

func (r WatchedResource) String() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// list is a GET of r's collection across namespaces, version v1, as an
// agent's informer lists it.
func (r WatchedResource) list(kc kubernetes.Interface) *rest.Request {
	base := "/api/v1"
	if r.Group != "" {
		base = "/apis/" + r.Group + "/v1"
	}
	return kc.CoreV1().RESTClient().Get().AbsPath(base, r.Resource)
}

// refusedByFault is a refusal for authorization: 403, or the 500 the API
// server answers when the fault's webhook cannot be reached.
func refusedByFault(err error) bool {
	return apierrors.IsForbidden(err) ||
		apierrors.IsInternalError(err) && strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", refusedWebhookPort))
}

// listResource lists r cluster-wide (one item) through kc.
func listResource(ctx context.Context, kc kubernetes.Interface, r WatchedResource) (outcome string, refused bool, err error) {
	err = r.list(kc).Param("limit", "1").Do(ctx).Error()
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return "accepted", false, nil
	case refusedByFault(err):
		return "refused (" + err.Error() + ")", true, nil
	case errors.As(err, &status):
		return "failed (" + err.Error() + ")", false, nil
	default:
		return "", false, fmt.Errorf("listing %s: %w", r, err)
	}
}

// getOwnNode gets the node object, as a node agent reads it.
func getOwnNode(ctx context.Context, kc kubernetes.Interface, node string) (outcome string, allowed bool) {
	_, err := kc.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	switch {
	case err == nil:
		return "accepted", true
	case refusedByFault(err):
		return "refused (" + err.Error() + ")", false
	default:
		return "failed (" + err.Error() + ")", false
	}
}

// listOwnPods lists the node's pods as its kubelet does. refused is true
// when the API server refused it for authorization: 403, or the 500 it
// answers when the fault's webhook cannot be reached (other 500s, such as
// etcd being away, are not this fault's doing).
func listOwnPods(ctx context.Context, kc kubernetes.Interface, node string) (outcome string, refused bool, err error) {
	_, err = kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, Limit: 1})
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return "accepted", false, nil
	case refusedByFault(err):
		return "refused (" + err.Error() + ")", true, nil
	case errors.As(err, &status):
		return "failed (" + err.Error() + ")", false, nil
	default:
		return "", false, fmt.Errorf("listing pods of %s: %w", node, err)
	}
}

// patchOwnStatus sends the node's status patch as its kubelet would, in
// dry-run so nothing is written; it returns what the API server refused,
// or "" when it accepted.
func patchOwnStatus(ctx context.Context, kc kubernetes.Interface, node string) (string, error) {
	_, err := kc.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(`{"status":{}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &status):
		return "refused (" + err.Error() + ")", nil
	default:
		return "", fmt.Errorf("patching the status of node %s: %w", node, err)
	}
}

func init() {
	register(KindBlackholeWatch, func(p blackholeWatchParams) fault.Fault { return &blackholeWatch{p: p} })
}
