package main

// The lab backends this program can open, each registering its kind with
// lab.Register from its init function. A kind with no import here is
// reported as "no backend for kind ..." when a lab of that kind is opened.
//
// Backends are linked here, and only here, with blank imports.

import (
	_ "github.com/faultline/faultline/lab/local"
	_ "github.com/faultline/faultline/lab/proxmox"
	_ "github.com/faultline/faultline/lab/static"
	_ "github.com/faultline/faultline/lab/vsphere"
)
