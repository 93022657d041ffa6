package vsphere

import (
	"fmt"

	"github.com/faultline/faultline/lab"
)

// Kind is the lab file's kind this backend serves.
const Kind = "vsphere"

// Section is a vsphere lab file's own section: how to reach vCenter.
type Section struct {
	URL        string `json:"url"`
	Insecure   bool   `json:"insecure,omitempty"`
	Datacenter string `json:"datacenter,omitempty"`
	// ColdSnapshot is the name of the snapshot taken with the whole fleet
	// powered off; Reset reverts every VM to it.
	ColdSnapshot string `json:"coldSnapshot"`
	// CredentialsFile holds "username" and "password" (YAML). Without it
	// FAULTLINE_VSPHERE_USERNAME and FAULTLINE_VSPHERE_PASSWORD are used.
	CredentialsFile string `json:"credentialsFile,omitempty"`
}

// sectionOf is c's vsphere section, nil when it has none.
func sectionOf(c *lab.Config) *Section {
	s, _ := c.Section().(*Section)
	return s
}

// validate is what a vsphere lab file needs beyond what every lab file
// does: SSH, a kubeconfig, vCenter with its cold snapshot, and every
// host's VM.
func validate(c *lab.Config) []error {
	errs := lab.RemoteProblems(c)
	if s := sectionOf(c); s == nil {
		errs = append(errs, fmt.Errorf("vsphere: is required for a vsphere lab"))
	} else {
		if s.URL == "" {
			errs = append(errs, fmt.Errorf("vsphere.url: is required"))
		}
		if s.ColdSnapshot == "" {
			errs = append(errs, fmt.Errorf("vsphere.coldSnapshot: is required (the snapshot taken with the fleet powered off)"))
		}
	}
	for i, h := range c.Hosts {
		if h.VM == "" {
			errs = append(errs, fmt.Errorf("hosts[%d].vm: is required for a vsphere lab (the VM's inventory path or name)", i))
		}
	}
	return errs
}
