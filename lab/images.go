package lab

import (
	"context"
	"errors"
	"sync"
)

// NodeImages are the container images a lab whose nodes pull from no
// registry loads into every node's runtime, and the pod sandbox image the
// runtime is pinned to. They are what the suites install, so the lab does
// not build them: the program provides them (ProvideNodeImages).
type NodeImages struct {
	// Sandbox is the image reference of the pod sandbox (pause) image.
	Sandbox string
	// Tarballs are OCI archives, each holding one or more tagged images.
	Tarballs []string
	// Refs are every reference the tarballs hold.
	Refs []string
	// Agents are the node agents' images by agent (ServiceKubeProxy,
	// ServicePolicyAgent), kept apart from Tarballs: a lab loads them
	// only where it runs its agents as pods (kubernetes.agents: pods).
	// Empty where the program packs none.
	Agents map[string]NodeImage
}

// NodeImage is one image and the archive holding it.
type NodeImage struct {
	Ref     string
	Tarball string
}

// NodeImageSource builds the node images, or finds them built, under
// cacheDir, a directory the lab keeps across runs.
type NodeImageSource func(ctx context.Context, cacheDir string) (NodeImages, error)

var (
	nodeImagesMu  sync.Mutex
	nodeImagesSrc NodeImageSource
)

// ProvideNodeImages sets the source of the node images. It panics when a
// source is already set: one program loads one set of images.
func ProvideNodeImages(src NodeImageSource) {
	nodeImagesMu.Lock()
	defer nodeImagesMu.Unlock()
	if src == nil {
		panic("lab: ProvideNodeImages(nil)")
	}
	if nodeImagesSrc != nil {
		panic("lab: node images provided twice")
	}
	nodeImagesSrc = src
}

// ErrNoNodeImages is returned by BuildNodeImages in a program that
// provides none.
var ErrNoNodeImages = errors.New("no node images provided: the program links no image source " +
	"(cmd/faultline and the suites link fixtures/images, which provides the fixture images)")

// BuildNodeImages asks the provided source for the node images.
func BuildNodeImages(ctx context.Context, cacheDir string) (NodeImages, error) {
	nodeImagesMu.Lock()
	src := nodeImagesSrc
	nodeImagesMu.Unlock()
	if src == nil {
		return NodeImages{}, ErrNoNodeImages
	}
	return src(ctx, cacheDir)
}
