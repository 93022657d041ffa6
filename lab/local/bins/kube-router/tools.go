//go:build tools

// Package kuberouter lists the kube-router command the local lab builds (its
// NetworkPolicy firewall is the lab's policy agent), so that go mod tidy keeps
// every dependency it needs in this module's go.sum.
package kuberouter

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
