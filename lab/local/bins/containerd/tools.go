//go:build tools

// Package containerd lists the containerd commands the local lab builds, so that
// go mod tidy keeps every dependency they need in this module's go.sum.
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
