//go:build tools

// Package crictl lists the cri-tools command the local lab builds, so that
// go mod tidy keeps every dependency it needs in this module's go.sum.
package crictl

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
