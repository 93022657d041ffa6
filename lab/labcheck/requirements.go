// Package labcheck says, per fault and per evidence source, what each
// needs from a cluster (root or sudo, tools and sockets on the hosts,
// API-server flags, a Kubernetes version, a capability of the lab), and
// checks a real lab against that list, reading only: it runs commands
// that change nothing, opens connections it closes, and asks the API
// servers and the history store what they are.
//
// The lists are data, reviewed like code: a fault kind registered with
// package fault and missing from Faults fails this package's tests, and
// lab/README.md carries the tables Markdown renders.
package labcheck

import (
	"fmt"
	"sort"
	"strings"
)

// A Requirement is one thing a fault or a source needs of a cluster.
type Requirement struct {
	// ID names it in the tables ("root").
	ID string
	// Needs says what the cluster must have, in one line.
	Needs string
	// Checked says how Check finds out, touching nothing.
	Checked string
	// check reads the lab.
	check func(*env) Finding
}

// Requirement IDs.
const (
	SSH            = "ssh"
	Root           = "root"
	Services       = "services"
	Power          = "power"
	IPTables       = "iptables"
	TC             = "tc"
	SocketKill     = "ss"
	CgroupFreezer  = "cgroup-freezer"
	OwnClock       = "own-clock"
	CRI            = "cri"
	ProxyRules     = "proxy-rules"
	PolicyRules    = "policy-rules"
	Forwarding     = "forwarding"
	Version130     = "kubernetes>=1.30"
	AuthzConfig    = "authorization-config"
	EtcdAccess     = "etcd-access"
	EtcdForks      = "etcd-forks"
	KubeletAccess  = "kubelet-access"
	AgentIDs       = "agent-identities"
	AgentConfigs   = "agent-kubeconfigs"
	ClusterDNS     = "cluster-dns"
	APIServers     = "apiserver-per-host"
	VirtualAddress = "virtual-address"
	Storage        = "storage"
	FSCheck        = "filesystem-check"
	VolumeDamage   = "volume-damage"
	Marker         = "lab-marker"
)

// Requirements are every requirement, in the order the tables give them.
var Requirements = []Requirement{
	{ID: Marker, Needs: "the lab file says `lab: true` and the cluster carries its marker (ConfigMap `kube-system/faultline-lab-marker`)", Checked: "the file, and a get of the ConfigMap", check: checkMarker},
	{ID: SSH, Needs: "every host answers over SSH, its host key in `ssh.knownHosts`", Checked: "`true` on every host", check: checkSSH},
	{ID: Root, Needs: "commands run as root: a root login, or `ssh.sudo` with passwordless sudo", Checked: "`id -u` on every host is 0", check: checkRoot},
	{ID: Services, Needs: "the service a scenario names is a unit of the host's service manager (systemd on SSH labs, or the lab file's `ssh.serviceCommand`: kubelet and containerd on workers, etcd on etcd hosts; a kubeadm control plane runs as static pods and has none)", Checked: "the host's service list (`systemctl show`, or the service command's `list`)", check: checkServices},
	{ID: Power, Needs: "hosts can be powered off and on: a hypervisor (vsphere, proxmox) or the local lab; the static lab cannot", Checked: "the lab's kind", check: checkPower},
	{ID: IPTables, Needs: "`iptables` and `iptables-save` on every host (chains of the fault's own in the filter and nat tables)", Checked: "`command -v` on every host", check: hostTools(IPTables, nil, "iptables", "iptables-save")},
	{ID: TC, Needs: "`tc` on every host whose interfaces have the kernel's default root qdisc (delay needs the netem qdisc, throttle htb)", Checked: "`command -v tc` on every host; the qdiscs are checked when the fault is injected", check: hostTools(TC, nil, "tc")},
	{ID: SocketKill, Needs: "`ss -K` on control-plane hosts (the kernel's socket destroy, CONFIG_INET_DIAG_DESTROY) to close connections so they are made again", Checked: "`command -v ss` on control-plane hosts; the kernel option shows only when the fault is injected", check: hostTools(SocketKill, roleControlPlane, "ss")},
	{ID: CgroupFreezer, Needs: "the cgroup freezer on workers: cgroup v2, or the v1 freezer hierarchy at `/sys/fs/cgroup/freezer`", Checked: "`/sys/fs/cgroup/cgroup.controllers` or `/sys/fs/cgroup/freezer` on every worker", check: checkFreezer},
	{ID: OwnClock, Needs: "each host reads a wall clock of its own that root may step (or a lab that shifts each process's clock, as the local lab does)", Checked: "the lab's answer (`lab.SharedWallClock`, `lab.ProcessClockSkewer`)", check: checkClock},
	{ID: CRI, Needs: "the container runtime readable on every worker: `kubernetes.runtimeEndpoint`'s socket, opened over SSH by the login itself (root, or a member of the socket's group: sudo does not apply), or `crictl` run as root", Checked: "the socket dialled and closed, else `crictl version`, on every worker", check: checkCRI},
	{ID: ProxyRules, Needs: "kube-proxy's rules readable on workers: `iptables-save` (`kubernetes.proxyMode: iptables`, the default) or `nft` (`nftables`)", Checked: "`command -v` on every worker", check: checkProxyRules},
	{ID: PolicyRules, Needs: "`kubernetes.policyAgent` names the NetworkPolicy agent, and its dump runs on workers as root (`iptables-save` and `ipset save` for calico and kube-router, `nft -j list ruleset inet` for kube-network-policies)", Checked: "the agent's dump run on every worker", check: checkPolicyRules},
	{ID: Forwarding, Needs: "each worker's sshd forwards TCP connections (OpenSSH's default `AllowTcpForwarding yes`): the probes, health checks and pod dials start on the node", Checked: "a connection from every worker to the first API server, closed at once", check: checkForwarding},
	{ID: Version130, Needs: "Kubernetes v1.30 or later: API servers that reload a structured authorization configuration (`--authorization-config`) and authorizers with match conditions", Checked: "the API server's version", check: checkVersion(1, 30)},
	{ID: AuthzConfig, Needs: "every API server runs with `--authorization-config` (a file it reloads), and the lab names the file (`lab.AuthorizationConfigFiles`: the local lab its own, an SSH lab the one each API server's command line names) or the scenario does", Checked: "the command line of the process listening on the API server port of each control-plane host (`ss -ltnp`, `/proc/<pid>/cmdline`)", check: checkAuthzConfig},
	{ID: EtcdAccess, Needs: "an etcd client this program can use: every member's client URL and a client certificate (`lab.EtcdAccess`: the local lab's own, an SSH lab file's `etcd:`)", Checked: "every member's status, asked with that client", check: checkEtcdAccess},
	{ID: EtcdForks, Needs: "on control-plane hosts the etcd binary, a member's serving certificate and the CA the API server's etcd client certificate is signed by (`lab.EtcdForks`)", Checked: "the lab's capability", check: capability(EtcdForks)},
	{ID: KubeletAccess, Needs: "a client certificate the kubelets' API (10250) accepts and the CA of their serving certificates (`lab.KubeletAccess`: the local lab's own, an SSH lab file's `kubelet:`)", Checked: "`/healthz` of every worker's kubelet with that client", check: checkKubeletAccess},
	{ID: AgentIDs, Needs: "node agents run as services that authenticate with an identity of their own per node (`lab.AgentIdentities`: the local lab's own; on SSH labs the client certificate of the kubeconfig `kubernetes.agentKubeconfigs` names, one per worker); agents run as pods have none (what the faults on them need is the table after the next)", Checked: "how the agents run (`lab.AgentRunOf`), then the lab's capability", check: capability(AgentIDs)},
	{ID: AgentConfigs, Needs: "node agents run as services, each reading a kubeconfig file on its host (`lab.AgentKubeconfigs`: the local lab's own; on SSH labs `kubernetes.agentKubeconfigs`)", Checked: "how the agents run (`lab.AgentRunOf`), then the lab's capability", check: capability(AgentConfigs)},
	{ID: ClusterDNS, Needs: "a cluster DNS address this program can reach (`lab.ClusterDNSAccess`)", Checked: "the lab's capability", check: capability(ClusterDNS)},
	{ID: APIServers, Needs: "each control-plane host's API server answers at the host's own address, port `network.apiServerPort`, with the lab's kubeconfig credentials", Checked: "`/version` at each", check: checkAPIServers},
	{ID: VirtualAddress, Needs: "`network.virtualIP` in front of the API servers", Checked: "`/version` at the lab's own kubeconfig", check: checkVirtualAddress},
	{ID: Storage, Needs: "storage for the stored-data workloads (`lab.StoredData`; SSH labs: the lab file's `storage:`): its StorageClasses exist, the history store answers from here (and from pods), and a lab that reads volumes through the cluster finds the reader image on every worker", Checked: "the StorageClasses got, the store's status, `crictl inspecti` of the reader image on every worker", check: checkStorage},
	{ID: FSCheck, Needs: "a lab that checks a block volume's file system where its data lives (`lab.FilesystemChecker`: the local lab; SSH labs do not)", Checked: "the lab's capability", check: capability(FSCheck)},
	{ID: VolumeDamage, Needs: "a lab that damages a volume's stored data on purpose where the storage holds it, not through a node (`lab.VolumeDamager`: the local lab; SSH labs do not)", Checked: "the lab's capability", check: capability(VolumeDamage)},
}

// Faults are what each fault kind needs, by kind. Every fault also needs
// lab-marker (the guard refuses any other cluster).
var Faults = map[string][]string{
	"power-off":           {SSH, Power},
	"stop-service":        {SSH, Root, Services},
	"kill":                {SSH, Root, Services},
	"freeze":              {SSH, Root, Services},
	"restart-service":     {SSH, Root, Services},
	"pod-freeze":          {SSH, Root, CgroupFreezer},
	"partition":           {SSH, Root, IPTables},
	"loss":                {SSH, Root, IPTables},
	"pod-network-cut":     {SSH, Root, IPTables},
	"delay":               {SSH, Root, TC},
	"throttle":            {SSH, Root, TC},
	"clock-skew":          {SSH, Root, OwnClock},
	"etcd-compact":        {EtcdAccess},
	"etcd-no-space":       {EtcdAccess},
	"blackhole-watch":     {SSH, Root, Version130, AuthzConfig, SocketKill},
	"apiserver-etcd-fork": {SSH, Root, EtcdForks, EtcdAccess, IPTables, SocketKill},
	"pin-agents":          {SSH, Root, AgentConfigs, Services},
	"compound":            {},
	"null":                {},
	// The positive controls (framework/fault/controls).
	"cut-then-force-delete":    {SSH, Root, IPTables},
	"cut-then-delete-node":     {SSH, Root, IPTables, Services},
	"quota-then-delete":        {},
	"dead-endpoint":            {SSH, Root, Services, CRI},
	"finalizer-then-delete":    {},
	"stop-then-out-of-service": {SSH, Root, Services},
	"stopped-through-heal":     {SSH, Root, Services},
	// The stored-data controls (framework/fault/controls, kits/storeddata/faults).
	"ledger-record-damaged":       {Storage, VolumeDamage},
	"stop-then-damage-filesystem": {Storage, VolumeDamage, FSCheck},
	"lease-handed-over":           {Storage},
	"second-ledger-writer":        {Storage},
}

// FaultNotes say more of a fault than its requirements.
var FaultNotes = map[string]string{
	"compound":              "what its parts need",
	"null":                  "nothing",
	"quota-then-delete":     "the API alone",
	"finalizer-then-delete": "the API alone",
	"second-ledger-writer":  "the API alone makes the second writer, a bare pod bound (`spec.nodeName`) to a worker host other than pod 0's that mounts pod 0's claims: the lab needs two workers, and the claim a class two nodes mount at once (the shared class)",
	"blackhole-watch":       "for a node agent run as a service also agent-identities",
	"freeze":                "the leader variants find the leader through etcd-access (etcd) or the Leases",
	"stop-service":          "the leader variants find the leader through etcd-access (etcd) or the Leases",
	"kill":                  "the leader variants find the leader through etcd-access (etcd) or the Leases",
}

// AgentPodFaults are what the fault kinds that address a node agent need
// when the agent runs as a DaemonSet's pod (kubernetes.agents: pods),
// which they address through the cluster and the node's cgroups instead
// of a host's service (framework/fault/README.md). stop-service and
// stopped-through-heal refuse such an agent: a DaemonSet's pod cannot be
// kept down.
var AgentPodFaults = map[string][]string{
	"freeze":          {SSH, Root, CgroupFreezer},
	"kill":            {SSH, Root, CgroupFreezer},
	"restart-service": {},
	"pin-agents":      {SSH, Root, IPTables, SocketKill},
	"blackhole-watch": {SSH, Root, Version130, AuthzConfig, SocketKill},
}

// AgentPodFaultNotes say more of a fault on an agent run as a pod.
var AgentPodFaultNotes = map[string]string{
	"freeze":          "the pod's cgroup frozen, found as pod-freeze finds it",
	"kill":            "the container's processes killed, found under the pod's cgroup as pod-freeze finds it",
	"restart-service": "the API alone (the pod deleted, the DaemonSet makes another)",
	"pin-agents":      "the node's nat table, and `ss -p`, `ss -K` on the node",
	"blackhole-watch": "the node name pod-bound tokens carry: Kubernetes 1.30+ (beta, on by default), GA in 1.32; inject refuses a server whose token review carries none",
}

// A Source is one evidence source and what it needs.
type Source struct {
	Name  string
	Needs []string
}

// Sources are the evidence sources of the framework and the paper suites.
var Sources = []Source{
	{"apiserver/<cp>", []string{APIServers}},
	{"apiserver/vip", []string{VirtualAddress}},
	{"etcd/<member>", []string{EtcdAccess}},
	{"kubelet/<node>", []string{KubeletAccess}},
	{"cri/<node>", []string{SSH, CRI}},
	{"kube-proxy/<node>", []string{SSH, Root, ProxyRules}},
	{"probe/<node>, pod/<node>, agents/<node>, coredns/<node>", []string{SSH, Forwarding}},
	{"policy-agent/<node>", []string{SSH, Root, PolicyRules}},
	{"dns", []string{ClusterDNS}},
	{"controlplane/<host>, informer", []string{APIServers}},
	{"ledger, kvdb, elector (stored data)", []string{Storage}},
	{"volume (the stored data's file system check)", []string{FSCheck}},
}

// requirementByID finds a requirement.
func requirementByID(id string) (Requirement, bool) {
	for _, r := range Requirements {
		if r.ID == id {
			return r, true
		}
	}
	return Requirement{}, false
}

// FaultKinds are the kinds Faults lists, sorted.
func FaultKinds() []string {
	return sortedKinds(Faults)
}

// AgentPodFaultKinds are the kinds AgentPodFaults lists, sorted.
func AgentPodFaultKinds() []string {
	return sortedKinds(AgentPodFaults)
}

func sortedKinds(m map[string][]string) []string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Markdown renders the requirements, and what each fault and source
// needs, as the tables of lab/README.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| requirement | what the cluster must have | how `lab check` finds out |\n|---|---|---|\n")
	for _, r := range Requirements {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.ID, r.Needs, r.Checked)
	}
	b.WriteString("\n| fault | needs (besides `lab-marker`) |\n|---|---|\n")
	for _, k := range FaultKinds() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", k, needsCell(Faults[k], FaultNotes[k]))
	}
	b.WriteString("\n| fault on a node agent run as a pod (`kubernetes.agents: pods`) | needs (besides `lab-marker`) |\n|---|---|\n")
	for _, k := range AgentPodFaultKinds() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", k, needsCell(AgentPodFaults[k], AgentPodFaultNotes[k]))
	}
	b.WriteString("\n| source | needs |\n|---|---|\n")
	for _, s := range Sources {
		fmt.Fprintf(&b, "| `%s` | %s |\n", s.Name, needsCell(s.Needs, ""))
	}
	return b.String()
}

func needsCell(ids []string, note string) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, "`"+id+"`")
	}
	s := strings.Join(parts, ", ")
	switch {
	case s == "":
		return note
	case note != "":
		return s + "; " + note
	}
	return s
}
