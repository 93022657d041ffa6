#!/usr/bin/env bash
# capture.sh runs the real agents whose applied state the agent readers
# parse (kube-proxy in nftables mode, then in iptables mode, then
# kube-router v2.1.0's firewall) against a one-member etcd and a
# kube-apiserver, all inside one throwaway network namespace, and writes
# what each agent programmed there. Nothing touches the machine's own
# tables: every process and every rule lives in the namespace, which is
# deleted at the end.
#
# The cluster has no kubelet and no controllers: the objects below
# (nodes, pods with their status, EndpointSlices, NetworkPolicies) are
# written directly, so the agents see exactly this state.
#
# Usage (root): KUBE_ROUTER=<kube-router v2.1.0 binary> capture.sh <output dir>
# The Kubernetes and etcd binaries are the cached ones (make bins).
set -euo pipefail

out="${1:?usage: KUBE_ROUTER=<binary> $0 <output dir>}"
kube_router="${KUBE_ROUTER:?KUBE_ROUTER must name a kube-router v2.1.0 binary}"
bins="${FAULTLINE_CACHE:-/var/cache/faultline}/bins"
k8s="$bins/kubernetes-v1.36.3"
etcd="$bins/etcd-v3.6.8/etcd"
kubectl="$bins/kubectl-v1.36.3/kubectl"
ns=fl-agentcap

for b in "$k8s/kube-apiserver" "$k8s/kube-proxy" "$etcd" "$kubectl" "$kube_router"; do
	[[ -x "$b" ]] || { echo "capture.sh: $b is not an executable" >&2; exit 1; }
done
if ip netns list | grep -qw "$ns"; then
	echo "capture.sh: network namespace $ns exists already (another capture running?)" >&2
	exit 1
fi
mkdir -p "$out"
work="$(mktemp -d)"
pids=()

cleanup() {
	# Last started first: the API server waits for etcd while it shuts
	# down.
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop "${pids[i]}"
	done
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

in_ns() { ip netns exec "$ns" "$@"; }
# start NAME CMD...: runs CMD in the namespace in a process group of its
# own; its pid is left in started.
started=""
start() {
	local name="$1"
	shift
	setsid ip netns exec "$ns" "$@" >"$work/$name.log" 2>&1 &
	started="$!"
	pids+=("$started")
}
# stop PID: ends the process group PID leads, killing it after 10 s.
stop() {
	kill -- "-$1" 2>/dev/null || true
	for _ in $(seq 1 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL -- "-$1" 2>/dev/null || true
	while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
}
# wait_for WHAT CMD...: polls CMD for up to 120 s.
wait_for() {
	local what="$1"
	shift
	for _ in $(seq 1 600); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	echo "capture.sh: gave up waiting for $what; logs in $work:" >&2
	tail -n 20 "$work"/*.log >&2
	exit 1
}

ip netns add "$ns"
in_ns ip link set lo up
# The API server's and worker1's addresses, on loopback (the namespace
# has no other link).
for a in 10.231.31.21 10.231.31.50; do in_ns ip addr add "$a/32" dev lo; done

start etcd "$etcd" --name capture --data-dir "$work/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster capture=http://127.0.0.1:2380 --log-level warn
token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$token,admin,1,\"system:masters\"" >"$work/tokens.csv"
openssl ecparam -name prime256v1 -genkey -noout -out "$work/sa.key" 2>/dev/null
openssl ec -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
start apiserver "$k8s/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
	--bind-address 10.231.31.21 --advertise-address 10.231.31.21 --secure-port 6443 \
	--cert-dir "$work/certs" --service-cluster-ip-range 10.250.31.0/24 \
	--service-account-issuer https://kubernetes.default.svc \
	--service-account-key-file "$work/sa.pub" --service-account-signing-key-file "$work/sa.key" \
	--token-auth-file "$work/tokens.csv" --authorization-mode AlwaysAllow \
	--disable-admission-plugins ServiceAccount --enable-priority-and-fairness=false --v 0
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: capture
  cluster: {server: "https://10.231.31.21:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: admin
  context: {cluster: capture, user: admin}
current-context: admin
EOF
kc() { in_ns "$kubectl" --kubeconfig "$work/kubeconfig" "$@"; }
wait_for "the API server" kc get --raw /readyz
wait_for "the kubernetes service" kc get service kubernetes

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kc apply -f "$here/capture-objects.yaml" >/dev/null
# What a kubelet would report: the nodes' addresses, the pods running.
kc patch node worker1 --subresource=status --type=merge \
	-p '{"status":{"addresses":[{"type":"InternalIP","address":"10.231.31.50"}]}}' >/dev/null
kc patch node worker2 --subresource=status --type=merge \
	-p '{"status":{"addresses":[{"type":"InternalIP","address":"10.231.31.51"}]}}' >/dev/null
while read -r pns pod host ip; do
	kc -n "$pns" patch pod "$pod" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"Running\",\"hostIP\":\"$host\",\"hostIPs\":[{\"ip\":\"$host\"}],\"podIP\":\"$ip\",\"podIPs\":[{\"ip\":\"$ip\"}]}}" >/dev/null
done <<'EOF'
faultline target-0 10.231.31.50 10.244.1.10
faultline client-0 10.231.31.50 10.244.1.11
faultline plain-0 10.231.31.50 10.244.1.12
faultline client-1 10.231.31.51 10.244.2.11
peers peer-0 10.231.31.51 10.244.2.20
EOF

cat >"$work/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$work/kubeconfig"}
clusterCIDR: 10.244.0.0/16
hostnameOverride: worker1
bindAddress: 0.0.0.0
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
EOF

# kube-proxy, one mode at a time, cleaned up after each.
proxy_mode() {
	local mode="$1"
	sed "s/^bindAddress:/mode: $mode\nbindAddress:/" "$work/kube-proxy.yaml" >"$work/kube-proxy-$mode.yaml"
	start "kube-proxy-$mode" "$k8s/kube-proxy" --config "$work/kube-proxy-$mode.yaml"
	local pid="$started"
	case "$mode" in
	nftables) wait_for "kube-proxy ($mode) to sync" sh -c "ip netns exec $ns nft list table ip kube-proxy | grep -q 'faultline/sticky/tcp/http__'" ;;
	iptables) wait_for "kube-proxy ($mode) to sync" sh -c "ip netns exec $ns iptables-save -t nat | grep -q 'faultline/sticky:http -> '" ;;
	esac
	wait_for "kube-proxy ($mode) healthz" in_ns curl -sf http://127.0.0.1:10256/healthz
	# The last service's chains are written in the same transaction as
	# the others; one more second lets a second sync (there should be none
	# in a cluster that does not change) finish.
	sleep 1
	case "$mode" in
	nftables)
		in_ns nft -j list table ip kube-proxy >"$out/kube-proxy-nft.json"
		in_ns nft list table ip kube-proxy >"$out/kube-proxy-nft.txt"
		;;
	iptables)
		{ in_ns iptables-save -t nat && in_ns iptables-save -t filter; } >"$out/kube-proxy-iptables-save.txt"
		;;
	esac
	stop "$pid"
	in_ns "$k8s/kube-proxy" --config "$work/kube-proxy-$mode.yaml" --cleanup >"$work/kube-proxy-cleanup-$mode.log" 2>&1
}
proxy_mode nftables
proxy_mode iptables

# Before kube-router: the filter table as a node without it has it.
in_ns iptables-save -t filter >"$out/kube-router-none-iptables-save.txt"
in_ns ipset save >"$out/kube-router-none-ipset-save.txt"

start kube-router "$kube_router" --kubeconfig "$work/kubeconfig" --hostname-override worker1 \
	--run-firewall=true --run-router=false --run-service-proxy=false \
	--service-cluster-ip-range 10.250.31.0/24 --health-port 20244 --metrics-port 0
pid="$started"
# A full sync has written the pod chains once the target's chain jumps to
# its policies, and the health endpoint answers once the controller's
# heartbeat is in.
wait_for "kube-router's pod chains" sh -c "ip netns exec $ns iptables-save -t filter | grep -q 'run through nw policy allow-client'"
wait_for "kube-router's health" in_ns curl -sf http://127.0.0.1:20244/healthz
sleep 2
in_ns iptables-save -t filter >"$out/kube-router-iptables-save.txt"
in_ns ipset save >"$out/kube-router-ipset-save.txt"

# One policy deleted: kube-router must drop it from the target's chain.
kc -n faultline delete networkpolicy allow-client >/dev/null
wait_for "kube-router to drop allow-client" sh -c "! ip netns exec $ns iptables-save -t filter | grep -q 'run through nw policy allow-client'"
sleep 2
in_ns iptables-save -t filter >"$out/kube-router-deleted-iptables-save.txt"
in_ns ipset save >"$out/kube-router-deleted-ipset-save.txt"
stop "$pid"

"$kube_router" --version >"$work/kube-router-version" 2>&1 || true
{
	echo "kube-router: $(head -n1 "$work/kube-router-version")"
	echo "kube-proxy: $("$k8s/kube-proxy" --version)"
	echo "iptables: $(iptables --version)"
	echo "ipset: $(ipset --version)"
	echo "nft: $(nft --version)"
	echo "kernel: $(uname -r)"
} >"$out/capture-versions.txt"
echo "capture.sh: wrote $out"
