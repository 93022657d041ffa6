#!/usr/bin/env bash
# build.sh builds the binaries the local lab runs from the Go modules next to
# this script (one module per upstream, because Kubernetes, containerd, etcd
# and cri-tools disagree on shared dependency versions) into a cache outside
# the repository, keyed by version:
#
#   ${FAULTLINE_CACHE:-/var/cache/faultline}/bins/<upstream>-<version>/<binary>
#
# A binary that already exists and reports the expected version is kept, so a
# second run does no work. Each binary is built into a temporary file and
# renamed into place, so an interrupted build never leaves a half-written
# binary that a later run would trust.
#
# Usage: build.sh [binary...]   (default: every binary; names as listed by -l)
#        build.sh -l            (list binary, version, destination)
#
# The versions here must match lab/local/binpaths, which finds the binaries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${FAULTLINE_CACHE:-/var/cache/faultline}/bins"

k8s_version=v1.36.3
etcd_version=v3.6.8
containerd_version=v2.4.2
crictl_version=v1.37.0
kube_router_version=v2.1.0
coredns_version=v1.14.7
external_attacher_version=v4.13.0

# Kubernetes binaries report their version from component-base (servers) and
# client-go (kubectl's client version); unset they say v0.0.0-master.
k8s_major="${k8s_version#v}"; k8s_major="${k8s_major%%.*}"
k8s_minor="${k8s_version#v*.}"; k8s_minor="${k8s_minor%%.*}"
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	k8s_ldflags+=" -X ${pkg}.gitVersion=${k8s_version}"
	k8s_ldflags+=" -X ${pkg}.gitMajor=${k8s_major} -X ${pkg}.gitMinor=${k8s_minor}"
done
containerd_ldflags="-X github.com/containerd/containerd/v2/version.Version=${containerd_version}"
containerd_ldflags+=" -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"
crictl_ldflags="-X sigs.k8s.io/cri-tools/pkg/version.Version=${crictl_version}"
kube_router_ldflags="-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=${kube_router_version}"
external_attacher_ldflags="-X main.version=${external_attacher_version}"

# One line per binary, fields separated by '|':
# binary | upstream | version | module dir | package | build tags | ldflags | version command | expected text
# The version command is run as "<binary> <args>" and must print the expected text.
targets=(
	"kube-apiserver|kubernetes|${k8s_version}|kubernetes|k8s.io/kubernetes/cmd/kube-apiserver||${k8s_ldflags}|--version|Kubernetes ${k8s_version}"
	"kube-controller-manager|kubernetes|${k8s_version}|kubernetes|k8s.io/kubernetes/cmd/kube-controller-manager||${k8s_ldflags}|--version|Kubernetes ${k8s_version}"
	"kube-scheduler|kubernetes|${k8s_version}|kubernetes|k8s.io/kubernetes/cmd/kube-scheduler||${k8s_ldflags}|--version|Kubernetes ${k8s_version}"
	"kubelet|kubernetes|${k8s_version}|kubernetes|k8s.io/kubernetes/cmd/kubelet||${k8s_ldflags}|--version|Kubernetes ${k8s_version}"
	"kube-proxy|kubernetes|${k8s_version}|kubernetes|k8s.io/kubernetes/cmd/kube-proxy||${k8s_ldflags}|--version|Kubernetes ${k8s_version}"
	"kubectl|kubectl|${k8s_version}|kubectl|.||${k8s_ldflags}|version --client|Client Version: ${k8s_version}"
	"etcd|etcd|${etcd_version}|etcd|go.etcd.io/etcd/server/v3|||--version|etcd Version: ${etcd_version#v}"
	"etcdctl|etcd|${etcd_version}|etcd|go.etcd.io/etcd/etcdctl/v3|||version|etcdctl version: ${etcd_version#v}"
	"containerd|containerd|${containerd_version}|containerd|github.com/containerd/containerd/v2/cmd/containerd|no_btrfs no_devmapper no_zfs no_aufs|${containerd_ldflags}|--version| ${containerd_version}"
	"ctr|containerd|${containerd_version}|containerd|github.com/containerd/containerd/v2/cmd/ctr|no_btrfs no_devmapper no_zfs no_aufs|${containerd_ldflags}|--version| ${containerd_version}"
	"containerd-shim-runc-v2|containerd|${containerd_version}|containerd|github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2|no_btrfs no_devmapper no_zfs no_aufs|${containerd_ldflags}|-v|${containerd_version}"
	"crictl|crictl|${crictl_version}|crictl|sigs.k8s.io/cri-tools/cmd/crictl||${crictl_ldflags}|--version|crictl version ${crictl_version}"
	"kube-router|kube-router|${kube_router_version}|kube-router|github.com/cloudnativelabs/kube-router/v2/cmd/kube-router||${kube_router_ldflags}|--version|${kube_router_version}"
	"coredns|coredns|${coredns_version}|coredns|.|||-version|CoreDNS-${coredns_version#v}"
	"csi-attacher|external-attacher|${external_attacher_version}|external-attacher|github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher||${external_attacher_ldflags}|--version| ${external_attacher_version}"
)

# How long each binary took to build cold (empty module and build caches,
# its module's downloads included), built one after another in this order,
# on a 2-core machine with nothing else running, on 2026-12-07
# (docs/measurements.md): what the estimate before a build says. Under
# load they take longer: all fifteen took 34m10s at load 10-13.
declare -A cold_seconds=(
	[kube-apiserver]=248 [kube-controller-manager]=63 [kube-scheduler]=6 [kubelet]=19
	[kube-proxy]=10 [kubectl]=25 [etcd]=26 [etcdctl]=2 [containerd]=58 [ctr]=4
	[containerd-shim-runc-v2]=2 [crictl]=24 [kube-router]=88 [coredns]=60 [csi-attacher]=137
)

elapsed() {
	local s=$1
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# reports_version BINARY ARGS EXPECTED: whether BINARY exists and its version
# output contains EXPECTED.
reports_version() {
	local bin=$1 args=$2 want=$3 out
	[[ -x "$bin" ]] || return 1
	# shellcheck disable=SC2086 # ARGS is a word list on purpose
	out="$("$bin" $args 2>&1)" || return 1
	[[ "$out" == *"$want"* ]]
}

list=0
if [[ "${1:-}" == "-l" ]]; then
	list=1
	shift
fi

declare -A wanted=()
for name in "$@"; do
	found=0
	for t in "${targets[@]}"; do
		[[ "${t%%|*}" == "$name" ]] && found=1
	done
	if [[ $found == 0 ]]; then
		known=()
		for t in "${targets[@]}"; do known+=("${t%%|*}"); done
		echo "build.sh: unknown binary \"$name\" (known: ${known[*]})" >&2
		exit 2
	fi
	wanted[$name]=1
done

# One pass over the selected binaries before building: how many, which are
# missing (each version command is run here, once), and how long the
# missing ones took cold on the reference machine, so a first run says
# what it is about to spend.
total=0
missing=0
expect=0
declare -A present=()
for t in "${targets[@]}"; do
	IFS='|' read -r name upstream version module pkg tags ldflags vargs want <<<"$t"
	if [[ $# -gt 0 && -z "${wanted[$name]:-}" ]]; then
		continue
	fi
	total=$((total + 1))
	[[ $list == 1 ]] && continue
	if reports_version "$cache/${upstream}-${version}/$name" "$vargs" "$want"; then
		present[$name]=1
	else
		missing=$((missing + 1))
		expect=$((expect + ${cold_seconds[$name]:-60}))
	fi
done
if ((missing > 0)); then
	printf 'bins: %d of %d to build; cold (empty Go caches, downloads included) they took %s on an otherwise idle 2-core machine (a loaded one takes up to three times that); this machine has %s cores (more shorten it, a warm Go build cache much more)\n' \
		"$missing" "$total" "$(elapsed "$expect")" "$(nproc)"
fi

start_all=$SECONDS
i=0
built=0
for t in "${targets[@]}"; do
	IFS='|' read -r name upstream version module pkg tags ldflags vargs want <<<"$t"
	if [[ $# -gt 0 && -z "${wanted[$name]:-}" ]]; then
		continue
	fi
	i=$((i + 1))
	dir="$cache/${upstream}-${version}"
	dest="$dir/$name"
	if [[ $list == 1 ]]; then
		printf '%-24s %-8s %s\n' "$name" "$version" "$dest"
		continue
	fi
	if [[ -n "${present[$name]:-}" ]]; then
		printf '[%d/%d] %s %s: already built (%s)\n' "$i" "$total" "$name" "$version" "$dest"
		continue
	fi
	printf '[%d/%d] %s %s: building...\n' "$i" "$total" "$name" "$version"
	mkdir -p "$dir"
	tmp="$(mktemp "$dir/.${name}.XXXXXX")"
	start=$SECONDS
	# Static binaries without cgo: the lab runs them inside network namespaces
	# of the same machine, and none of these binaries needs cgo for what the lab
	# uses (containerd's cgo-only snapshotters are excluded by the build tags).
	(cd "$here/$module" && exec env CGO_ENABLED=0 go build -trimpath \
		-tags "$tags" -ldflags "-s -w $ldflags" -o "$tmp" "$pkg") &
	build_pid=$!
	# A background job ignores SIGINT in a non-interactive shell, so an
	# interrupted build.sh stops the go build itself.
	trap 'kill "$build_pid" 2>/dev/null; rm -f "$tmp"; exit 130' INT TERM
	while kill -0 "$build_pid" 2>/dev/null; do
		sleep 1
		if (((SECONDS - start) % 60 == 0)); then
			printf '[%d/%d] %s %s: still building (%s)\n' "$i" "$total" "$name" "$version" "$(elapsed $((SECONDS - start)))"
		fi
	done
	build_status=0
	wait "$build_pid" || build_status=$?
	trap - INT TERM
	if [[ $build_status != 0 ]]; then
		rm -f "$tmp"
		printf 'build.sh: building %s %s (package %s in %s) failed after %s\n' \
			"$name" "$version" "$pkg" "$here/$module" "$(elapsed $((SECONDS - start)))" >&2
		exit 1
	fi
	chmod 0755 "$tmp"
	if ! reports_version "$tmp" "$vargs" "$want"; then
		printf 'build.sh: %s built but "%s %s" does not report "%s":\n' "$name" "$name" "$vargs" "$want" >&2
		# shellcheck disable=SC2086
		"$tmp" $vargs >&2 || true
		rm -f "$tmp"
		exit 1
	fi
	mv -f "$tmp" "$dest"
	built=$((built + 1))
	printf '[%d/%d] %s %s: built in %s -> %s\n' "$i" "$total" "$name" "$version" \
		"$(elapsed $((SECONDS - start)))" "$dest"
done
if [[ $list == 0 ]]; then
	printf 'bins: %d built, %d already present, total %s\n' "$built" "$((total - built))" \
		"$(elapsed $((SECONDS - start_all)))"
fi
