package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindPodNetworkCut is the kind of PodNetworkCut faults.
const KindPodNetworkCut = "pod-network-cut"

// ClassGrayNetwork is a network path cut while the node stays Ready.
const ClassGrayNetwork fault.Class = "gray-network"

// overlayLinkTypes are the devices pod traffic between nodes crosses on
// clusters whose CNI encapsulates it.
var overlayLinkTypes = []string{"vxlan", "ipip", "geneve", "wireguard"}

type podNetworkCutParams struct {
	Host string `json:"host"`
	Tag  string `json:"tag"`
}

func (p podNetworkCutParams) check() error {
	var errs []error
	if p.Host == "" {
		errs = append(errs, errors.New("no host named"))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PodNetworkCut drops every packet that enters or leaves host by its pod
// network device (the pod transport link the lab names, else the CNI's
// overlay devices), in a chain of the fault's own hooked into INPUT, OUTPUT
// and FORWARD. The management network, kubelet's heartbeats and its probes
// of local pods are untouched, so the node stays Ready while its pods
// cannot reach, or be reached from, pods on other nodes.
func PodNetworkCut(host string) fault.Fault {
	return &podNetworkCut{p: podNetworkCutParams{Host: host, Tag: newTag()}}
}

type podNetworkCut struct{ p podNetworkCutParams }

func (f *podNetworkCut) Kind() string            { return KindPodNetworkCut }
func (f *podNetworkCut) Class() fault.Class      { return ClassGrayNetwork }
func (f *podNetworkCut) Params() json.RawMessage { return mustJSON(f.p) }
func (f *podNetworkCut) chain() string           { return chainName(f.p.Tag) }

func (f *podNetworkCut) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("pod network cut: %w", err)
	}
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("pod network cut: %w", err)
	}
	devs, err := podDevices(ctx, l, h)
	if err != nil {
		return fmt.Errorf("pod network cut on %s: %w", h.Name(), err)
	}
	if _, err := run(ctx, h, podCutRules(f.chain(), devs).installScript(h.Address())); err != nil {
		return fmt.Errorf("pod network cut on %s: %w", h.Name(), err)
	}
	return nil
}

func podCutRules(chain string, devs []string) chainRules {
	var rules []string
	for _, d := range devs {
		rules = append(rules, "-i "+d+" -j DROP", "-o "+d+" -j DROP")
	}
	return chainRules{chain: chain, hooks: []string{"INPUT", "OUTPUT", "FORWARD"}, rules: rules}
}

// podDevices are the devices pod traffic between nodes uses on h.
func podDevices(ctx context.Context, l lab.Lab, h lab.Host) ([]string, error) {
	if !h.HasRole(lab.RoleWorker) && !h.HasRole(lab.RoleControlPlane) {
		return nil, fmt.Errorf("%s runs no pods (roles %v)", h.Name(), h.Roles())
	}
	if ni, ok := l.(lab.NetworkInterfaces); ok {
		d, err := ni.PodInterface(h.Name())
		if err != nil {
			return nil, err
		}
		return []string{d}, nil
	}
	var devs []string
	for _, t := range overlayLinkTypes {
		out, err := run(ctx, h, "ip -o link show type "+t)
		if err != nil {
			continue // the kernel may not know the type at all
		}
		devs = append(devs, linkNames(out)...)
	}
	if len(devs) == 0 {
		return nil, lab.Unsupported(l.Info().Kind, "pod network cut on "+h.Name(), "the lab names no pod interface (lab.NetworkInterfaces) and the host has no overlay device ("+strings.Join(overlayLinkTypes, ", ")+"); pods routed over the management interface cannot be cut apart from it")
	}
	return devs, nil
}

var linkLine = regexp.MustCompile(`^\d+:\s+([^:@\s]+)`)

// linkNames reads interface names from `ip -o link show` output.
func linkNames(listing string) []string {
	var out []string
	for _, line := range strings.Split(listing, "\n") {
		if m := linkLine.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

func (f *podNetworkCut) Heal(ctx context.Context, l lab.Lab) error {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fmt.Errorf("healing pod network cut: %w", err)
	}
	if _, err := healRun(ctx, h, removeChainScript(f.chain(), h.Address())); err != nil {
		return fmt.Errorf("healing pod network cut on %s: %w", h.Name(), err)
	}
	return nil
}

var viaGateway = regexp.MustCompile(`\bvia (\d+\.\d+\.\d+\.\d+)`)

// Probe opens a TCP connection from the host to another node's end of the
// pod network (a gateway of a route over the pod device): normally the
// peer answers (a refusal is an answer); cut, the SYN times out.
func (f *podNetworkCut) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return fault.Effect{}, err
	}
	devs, err := podDevices(ctx, l, h)
	if err != nil {
		return fault.Effect{}, err
	}
	var peer string
	for _, d := range devs {
		out, err := run(ctx, h, "ip -4 route show dev "+d)
		if err != nil {
			return fault.Effect{}, err
		}
		if m := viaGateway.FindStringSubmatch(out); m != nil {
			peer = m[1]
			break
		}
	}
	if peer == "" {
		return fault.Effect{}, fmt.Errorf("%s has no route to another node over %v to probe", h.Name(), devs)
	}
	port := sshPort(l)
	res, err := tcpConnect(ctx, h, peer, port, connectProbeTimeout)
	if err != nil {
		return fault.Effect{}, err
	}
	return connectEffect(res, fmt.Sprintf("TCP from %s over the pod network to %s:%d: %s", h.Name(), peer, port, res)), nil
}

func init() {
	register(KindPodNetworkCut, func(p podNetworkCutParams) fault.Fault { return &podNetworkCut{p: p} })
}
