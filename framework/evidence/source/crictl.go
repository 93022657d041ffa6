package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline/faultline/framework/evidence"
)

// crictlSeparator splits the two crictl answers in one SSH round trip.
const crictlSeparator = "----faultline-crictl-containers----"

// crictlCommand lists every pod sandbox and every container (exited ones
// too: a container that stopped is evidence) as JSON. The two crictl calls
// run at once, each into a file of its own, because each is a process start
// and a runtime connection and a snapshot round waits for the slower. The
// files are opened (to write and to read back) and removed at once, before
// either call starts: a command killed at its timeout, whose exit trap
// never runs, leaves nothing on the host.
const crictlCommand = `d=$(mktemp -d) || exit 1; ` +
	`exec 3>"$d/pods" 4<"$d/pods" 5>"$d/ps" 6<"$d/ps"; rm -rf "$d"; ` +
	`crictl pods -o json >&3 & ` +
	`crictl ps -a -o json >&5; ps=$?; wait $!; pods=$?; ` +
	`[ $pods -eq 0 ] || exit $pods; [ $ps -eq 0 ] || exit $ps; ` +
	`cat <&4; echo ` + crictlSeparator + `; cat <&6`

// listCrictl runs both crictl listings on the host in one command.
func (r *Runtime) listCrictl(ctx context.Context) (RuntimeListing, error) {
	res, err := r.host.Run(ctx, crictlCommand)
	if err != nil {
		return RuntimeListing{}, errors.New(Reason(err))
	}
	if res.ExitCode != 0 {
		return RuntimeListing{}, fmt.Errorf("error: crictl on %s exited %d: %s", r.host.Name(), res.ExitCode, FirstLine([]byte(res.Stderr)))
	}
	pods, containers, ok := strings.Cut(res.Stdout, crictlSeparator)
	if !ok {
		return RuntimeListing{}, errors.New("error: crictl output lacks its separator")
	}
	l, err := ParseCrictl([]byte(pods), []byte(containers))
	if err != nil {
		return RuntimeListing{}, errors.New("error: " + err.Error())
	}
	return l, nil
}

// crictl prints the CRI responses with protojson (lowerCamelCase names,
// enums by name, int64 nanoseconds as strings), which decodes them back
// into the CRI's own types. Fields a newer crictl adds are ignored.
var crictlJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// ParseCrictl decodes `crictl pods -o json` and `crictl ps -a -o json`
// into the listing the CRI calls give.
func ParseCrictl(podsJSON, containersJSON []byte) (RuntimeListing, error) {
	var pods runtimeapi.ListPodSandboxResponse
	if err := crictlJSON.Unmarshal(podsJSON, &pods); err != nil {
		return RuntimeListing{}, fmt.Errorf("decoding crictl pods: %w", err)
	}
	ctrs, err := parseCrictlContainers(containersJSON)
	if err != nil {
		return RuntimeListing{}, err
	}
	return RuntimeListingOf(pods.GetItems(), ctrs), nil
}

func parseCrictlContainers(containersJSON []byte) ([]*runtimeapi.Container, error) {
	var ctrs runtimeapi.ListContainersResponse
	if err := crictlJSON.Unmarshal(containersJSON, &ctrs); err != nil {
		return nil, fmt.Errorf("decoding crictl ps: %w", err)
	}
	return ctrs.GetContainers(), nil
}

// RuntimePodFromCrictl picks the pod's sandboxes and containers out of
// `crictl pods -o json` and `crictl ps -a -o json`. Running means a ready
// sandbox of the pod with a running container in it.
func RuntimePodFromCrictl(podsJSON, containersJSON []byte, namespace, name string) (evidence.RuntimePodValue, error) {
	l, err := ParseCrictl(podsJSON, containersJSON)
	if err != nil {
		return evidence.RuntimePodValue{}, err
	}
	return l.RuntimePod(namespace, name), nil
}

// NamespaceContainersFromCrictl picks namespace's containers out of
// `crictl ps -a -o json`.
func NamespaceContainersFromCrictl(containersJSON []byte, namespace string) (evidence.NamespaceContainersValue, error) {
	ctrs, err := parseCrictlContainers(containersJSON)
	if err != nil {
		return evidence.NamespaceContainersValue{}, err
	}
	return RuntimeListingOf(nil, ctrs).NamespaceContainers(namespace), nil
}
