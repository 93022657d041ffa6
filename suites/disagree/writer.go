package disagree

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/faultline/faultline/lab"
)

// WriterLabelPrefix routes the register writer of one scenario: with
// "writer:cp3" it sends its requests to the API server on cp3 alone
// instead of the virtual address, so a fault on that server reaches the
// writes (the split-brain control loses what cp3 acknowledged).
const WriterLabelPrefix = "writer:"

// WriterAPIServer returns the address the writer of a scenario with these
// labels sends its requests to: the named control-plane host's API server,
// else the lab's virtual address, else "" (the in-cluster Service).
func WriterAPIServer(labels []string, l lab.Lab) (string, error) {
	c := l.Config()
	if c == nil {
		return "", fmt.Errorf("the lab has no configuration to route the writer by")
	}
	// Loading a lab file sets the port (6443 unless it names one).
	port := c.Network.APIServerPort
	var named []string
	for _, lb := range labels {
		if h, ok := strings.CutPrefix(lb, WriterLabelPrefix); ok {
			named = append(named, h)
		}
	}
	switch len(named) {
	case 0:
		if c.Network.VirtualIP != "" {
			return net.JoinHostPort(c.Network.VirtualIP, strconv.Itoa(port)), nil
		}
		return "", nil
	case 1:
		h, err := l.Host(named[0])
		if err != nil {
			return "", fmt.Errorf("label %s%s: %w", WriterLabelPrefix, named[0], err)
		}
		if !h.HasRole(lab.RoleControlPlane) {
			return "", fmt.Errorf("label %s%s: the host runs no API server", WriterLabelPrefix, named[0])
		}
		return net.JoinHostPort(h.Address(), strconv.Itoa(port)), nil
	default:
		return "", fmt.Errorf("labels name %d writer routes (%v); a scenario has one writer", len(named), named)
	}
}
