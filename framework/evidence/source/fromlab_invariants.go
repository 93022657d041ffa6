package source

import (
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// apiServerReader is one API server's reader: the snapshot questions and
// the control plane's own objects (leader Leases, the test Deployment),
// under one source name.
func apiServerReader(name evidence.Source, cs kubernetes.Interface, o Options) (evidence.Reader, error) {
	r, err := Combine(NewAPIServer(name, cs, o.Subjects), NewControlObjects(name, cs, o.DeploymentNamespace, o.DeploymentName))
	if err != nil {
		return nil, fmt.Errorf("reader of %s: %w", name, err)
	}
	return r, nil
}

// invariantReaders are the sources some invariants need beyond the
// snapshot's: whether each control-plane host's controller-manager and
// scheduler lead (single-leader), an endpoint prober on every worker
// (endpoints-truthful) and the register writer's history
// (acknowledged-writes-survive). client is the one a user would use (the
// virtual address where there is one): the probers find the endpoints and
// the writer's log through it.
func invariantReaders(l lab.Lab, client kubernetes.Interface, o Options) []evidence.Reader {
	var out []evidence.Reader
	for _, h := range lab.HostsWithRole(l, lab.RoleControlPlane) {
		out = append(out, leadingReader(l, h))
	}

	for _, h := range lab.HostsWithRole(l, lab.RoleWorker) {
		if client == nil {
			out = append(out, NewUnavailable(evidence.Source("probe/"+h.Name()), []evidence.Question{evidence.EndpointProbes}, "no API server to find the endpoints to probe through"))
			continue
		}
		out = append(out, NewProber(h, client, o.Subjects, o.ProbePath))
	}

	if client == nil {
		out = append(out, NewUnavailable("writer", []evidence.Question{evidence.RegisterHistory}, "no API server to read the writer's log through"))
	} else {
		out = append(out, NewWriter(client, WriterNamespace, WriterSelector))
	}
	return out
}

// leadingReader is the "controlplane/<host>" source of h, read with the
// admin kubeconfig's credentials.
func leadingReader(l lab.Lab, h lab.Host) evidence.Reader {
	name := evidence.Source("controlplane/" + h.Name())
	questions := []evidence.Question{evidence.ControllerManagerLeading, evidence.SchedulerLeading}
	path, err := l.Kubeconfig("")
	if err != nil {
		return NewUnavailable(name, questions, "no admin kubeconfig to read the components' metrics with: "+err.Error())
	}
	hc, err := MetricsClientFromKubeconfig(path, nil)
	if err != nil {
		return NewUnavailable(name, questions, err.Error())
	}
	return NewLeading(h.Name(), h.Address(), hc, 0, 0).WithHost(h)
}
