package lab

// PolicyDumpSeparator splits the two dumps of one policy-rules read of an
// agent that programs both iptables and IP sets.
const PolicyDumpSeparator = "---- faultline: ipset save ----"

// policyDumpCommands are the commands that dump what each policy agent
// applied on a node, by the name a lab file gives it
// (KubernetesSettings.PolicyAgent). The lab check runs them to see
// that a lab can (lab/labcheck); the data plane's readers run them
// and parse what they print.
var policyDumpCommands = map[string]string{
	// The filter table and the IP sets in one command, for agents that
	// program both (kube-router, Calico's iptables data plane).
	PolicyAgentKubeRouter: iptablesAndIPSets,
	PolicyAgentCalico:     iptablesAndIPSets,
	// Every inet table: kube-network-policies' own, or none where it has
	// programmed nothing (listing a table that does not exist fails).
	PolicyAgentKubeNetworkPolicies: "nft -j list ruleset inet",
}

const iptablesAndIPSets = "iptables-save -t filter && echo '" + PolicyDumpSeparator + "' && ipset save"

// PolicyDumpCommand is the command that dumps what agent (a
// PolicyAgent* name) applied on a node; ok is false for an agent
// whose rules are not read.
func PolicyDumpCommand(agent string) (cmd string, ok bool) {
	cmd, ok = policyDumpCommands[agent]
	return cmd, ok
}
