package evidence

import (
	"time"

	"github.com/faultline/faultline/lab"
)

// The values below answer no question of the framework's own: they are
// what the framework's readers give for questions a suite declares (see
// evidence/sampler's Extras), so that two suites asking the same thing
// decode the same value.

// NamespaceContainersValue is one namespace's containers in one node's
// container runtime, in creation order.
type NamespaceContainersValue struct {
	Containers []NamespaceContainer `json:"containers"`
}

// NamespaceContainer is one container as crictl lists it, with the pod it
// belongs to (from the kubelet's labels).
type NamespaceContainer struct {
	Pod       string    `json:"pod"`
	PodUID    string    `json:"podUid"`
	ID        string    `json:"id"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
}

// Running lists the containers in state CONTAINER_RUNNING.
func (v NamespaceContainersValue) Running() []NamespaceContainer {
	var out []NamespaceContainer
	for _, c := range v.Containers {
		if c.State == "CONTAINER_RUNNING" {
			out = append(out, c)
		}
	}
	return out
}

// ServicesValue is some of one host's processes as its lab reports them
// (lab.Host.Services).
type ServicesValue struct {
	Services []lab.ServiceState `json:"services"`
}
