//go:build tools

// Package externalattacher lists the csi-attacher command the local lab
// builds, so that go mod tidy keeps every dependency it needs in this
// module's go.sum.
package externalattacher

import _ "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher"
