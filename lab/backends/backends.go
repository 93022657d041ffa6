// Package backends links every lab backend into a program: importing it
// (blank) registers the local, static, proxmox and vsphere kinds with the
// lab package, so that lab.Open and lab.LoadConfig know them. cmd/faultline
// and every suite import it; nothing else should need to know which
// backends exist.
package backends

import (
	_ "github.com/faultline/faultline/lab/local"
	_ "github.com/faultline/faultline/lab/proxmox"
	_ "github.com/faultline/faultline/lab/static"
	_ "github.com/faultline/faultline/lab/vsphere"
)
