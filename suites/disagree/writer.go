package disagree

import (
	"fmt"
	"net"
	"strconv"

	"github.com/faultline/faultline/lab"
)

// WriterAPIServer returns the address the register writer of a scenario
// sends its requests to: the API server of the control-plane host writer
// names (scenario.Scenario.Writer: with cp3, a fault on cp3's server
// reaches the writes, and the split-brain control loses what cp3
// acknowledged), else the lab's virtual address, else "" (the in-cluster
// Service).
func WriterAPIServer(writer string, l lab.Lab) (string, error) {
	c := l.Config()
	if c == nil {
		return "", fmt.Errorf("the lab has no configuration to route the writer by")
	}
	// Loading a lab file sets the port (6443 unless it names one).
	port := c.Network.APIServerPort
	if writer == "" {
		if c.Network.VirtualIP != "" {
			return net.JoinHostPort(c.Network.VirtualIP, strconv.Itoa(port)), nil
		}
		return "", nil
	}
	h, err := l.Host(writer)
	if err != nil {
		return "", fmt.Errorf("writer %s: %w", writer, err)
	}
	if !h.HasRole(lab.RoleControlPlane) {
		return "", fmt.Errorf("writer %s: the host runs no API server", writer)
	}
	return net.JoinHostPort(h.Address(), strconv.Itoa(port)), nil
}
