package source

import (
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// Options say what FromLab reads and how long it waits.
type Options struct {
	Subjects evidence.Subjects
	// RequestTimeout bounds one request to an API server, etcd or the
	// kubelet (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// EtcdMember is the etcd host read directly (default: the first).
	EtcdMember string
	// KubeletHost and ProxyHost are the node whose kubelet API and whose
	// kube-proxy rules are read (default: Subjects.Node).
	KubeletHost, ProxyHost string
	// DeploymentNamespace and DeploymentName name the Deployment whose
	// replicas every API server is asked for (default: the fixtures' web).
	DeploymentNamespace, DeploymentName string
	// ProbePath is the HTTP path the endpoint probers ask (default
	// DefaultProbePath).
	ProbePath string
	// RuntimeQuestions are a suite's own questions that each worker's
	// container runtime source answers besides PodRunningHere.
	RuntimeQuestions []RuntimeQuestion
}

// DefaultProbePath is what the fixtures' netexec pods answer on.
const DefaultProbePath = "/healthz"

func (o *Options) defaults() {
	if o.Subjects == (evidence.Subjects{}) {
		o.Subjects = evidence.DefaultSubjects
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.KubeletHost == "" {
		o.KubeletHost = o.Subjects.Node
	}
	if o.ProxyHost == "" {
		o.ProxyHost = o.Subjects.Node
	}
	if o.ProbePath == "" {
		o.ProbePath = DefaultProbePath
	}
}

// Set is the readers of one lab and what must be closed after.
type Set struct {
	Readers []evidence.Reader
	// Watch is the client the timeline recorder watches (the first API
	// server) and its source name; Poll are the other servers it polls.
	Watch    Client
	Poll     []Client
	closeFns []func() error
}

// Client is an API server client with the source name it reads as.
type Client struct {
	Source evidence.Source
	Client kubernetes.Interface
}

// Close releases the etcd and container runtime connections.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.closeFns {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// FromLab makes every source of l: each API server at its own address and
// the virtual address (with the leader Leases and the test Deployment),
// one etcd member read serializably and linearizably, the kubelet API and
// kube-proxy rules of worker1, each worker's container runtime (over CRI
// where the lab names its socket, lab.RuntimeSocket, else crictl), cluster
// DNS, the informer fixture, each control-plane host's controller-manager
// and scheduler ("controlplane/<host>": do they lead), an endpoint prober
// on every worker ("probe/<host>") and the register writer's history. What the lab cannot offer
// becomes an Unavailable source naming why; an error means the lab's own
// description is wrong (an unknown host named in o).
func FromLab(l lab.Lab, o Options) (*Set, error) {
	o.defaults()
	s := &Set{}
	apiQuestions := append((&APIServer{}).Questions(), (&ControlObjects{}).Questions()...)
	var firstClient, vipClient kubernetes.Interface
	for _, h := range lab.HostsWithRole(l, lab.RoleControlPlane) {
		name := evidence.Source("apiserver/" + h.Name())
		path, err := l.Kubeconfig(h.Name())
		if err != nil {
			s.Readers = append(s.Readers, NewUnavailable(name, apiQuestions, "no kubeconfig for this server: "+err.Error()))
			continue
		}
		cs, _, err := ClientFromKubeconfig(path, o.RequestTimeout)
		if err != nil {
			s.Readers = append(s.Readers, NewUnavailable(name, apiQuestions, err.Error()))
			continue
		}
		r, err := apiServerReader(name, cs, o)
		if err != nil {
			return nil, err
		}
		s.Readers = append(s.Readers, r)
		c := Client{Source: name, Client: cs}
		if firstClient == nil {
			firstClient = cs
			s.Watch = c
		} else {
			s.Poll = append(s.Poll, c)
		}
	}
	const vip = evidence.Source("apiserver/vip")
	if l.Config() == nil || l.Config().Network.VirtualIP == "" {
		s.Readers = append(s.Readers, NewUnavailable(vip, apiQuestions, NotDeployed("the lab has no virtual address")))
	} else if path, err := l.Kubeconfig(""); err != nil {
		s.Readers = append(s.Readers, NewUnavailable(vip, apiQuestions, "no kubeconfig for the virtual address: "+err.Error()))
	} else if cs, _, err := ClientFromKubeconfig(path, o.RequestTimeout); err != nil {
		s.Readers = append(s.Readers, NewUnavailable(vip, apiQuestions, err.Error()))
	} else {
		r, err := apiServerReader(vip, cs, o)
		if err != nil {
			return nil, err
		}
		s.Readers = append(s.Readers, r)
		vipClient = cs
		s.Poll = append(s.Poll, Client{Source: vip, Client: cs})
		if firstClient == nil {
			firstClient = cs
		}
	}
	if firstClient == nil && s.Watch.Client == nil {
		// A lab with only a kubeconfig of its own (a static cluster).
		if path, err := l.Kubeconfig(""); err == nil {
			if cs, _, err := ClientFromKubeconfig(path, o.RequestTimeout); err == nil {
				firstClient = cs
			}
		}
	}
	if firstClient != nil && s.Watch.Client == nil {
		s.Watch = Client{Source: "apiserver/vip", Client: firstClient}
	}

	etcdReaders, closeEtcd, err := etcdFromLab(l, o)
	if err != nil {
		return nil, err
	}
	s.Readers = append(s.Readers, etcdReaders...)
	if closeEtcd != nil {
		s.closeFns = append(s.closeFns, closeEtcd)
	}

	kubeletName := evidence.Source("kubelet/" + o.KubeletHost)
	if _, err := l.Host(o.KubeletHost); err != nil {
		return nil, fmt.Errorf("kubelet source: %w", err)
	}
	if ka, ok := l.(lab.KubeletAccess); !ok {
		s.Readers = append(s.Readers, NewUnavailable(kubeletName, (&Kubelet{}).Questions(), "not readable in this lab: it offers no kubelet client access (lab.KubeletAccess)"))
	} else if url, tlsConfig, err := ka.KubeletClientConfig(o.KubeletHost); err != nil {
		s.Readers = append(s.Readers, NewUnavailable(kubeletName, (&Kubelet{}).Questions(), "kubelet client config: "+err.Error()))
	} else {
		s.Readers = append(s.Readers, NewKubelet(o.KubeletHost, url, tlsConfig, o.Subjects))
	}

	for _, h := range lab.HostsWithRole(l, lab.RoleWorker) {
		socket, ok, err := lab.RuntimeSocket(l, h.Name())
		switch {
		case err != nil:
			qs := (&Runtime{also: o.RuntimeQuestions}).Questions()
			s.Readers = append(s.Readers, NewUnavailable(evidence.Source("cri/"+h.Name()), qs, "the CRI socket: "+err.Error()))
		case ok:
			r := NewRuntime(h, socket, o.Subjects, o.RuntimeQuestions...)
			s.Readers = append(s.Readers, r)
			s.closeFns = append(s.closeFns, r.Close)
		default:
			s.Readers = append(s.Readers, NewCrictlRuntime(h, o.Subjects, o.RuntimeQuestions...))
		}
	}
	proxyHost, err := l.Host(o.ProxyHost)
	if err != nil {
		return nil, fmt.Errorf("proxy source: %w", err)
	}
	s.Readers = append(s.Readers, ProxyFor(l, NewProxy(proxyHost, o.Subjects)))

	if da, ok := l.(lab.ClusterDNSAccess); !ok {
		// Not "no cluster DNS": the local lab runs CoreDNS, whose answers
		// only pods reach (the data plane's readers ask them from pods).
		s.Readers = append(s.Readers, NewDNSNotDeployed("the lab gives no cluster DNS address this program can reach (lab.ClusterDNSAccess)"))
	} else if addr, domain, err := da.ClusterDNSServer(); err != nil {
		s.Readers = append(s.Readers, NewUnavailable("dns", []evidence.Question{evidence.ServiceDNS}, "cluster DNS address: "+err.Error()))
	} else if addr == "" {
		s.Readers = append(s.Readers, NewDNSNotDeployed("the lab runs no cluster DNS"))
	} else {
		s.Readers = append(s.Readers, NewDNS(addr, domain, o.Subjects))
	}

	// The fixture is read through the virtual address where there is one,
	// so that one API server stopped does not hide it.
	switch {
	case vipClient != nil:
		s.Readers = append(s.Readers, NewInformer(vipClient, o.Subjects))
	case firstClient != nil:
		s.Readers = append(s.Readers, NewInformer(firstClient, o.Subjects))
	default:
		s.Readers = append(s.Readers, NewUnavailable("informer", (&Informer{}).Questions(), "no API server to find the informer fixture through"))
	}
	userClient := vipClient
	if userClient == nil {
		userClient = firstClient
	}
	s.Readers = append(s.Readers, invariantReaders(l, userClient, o)...)
	return s, nil
}

func etcdFromLab(l lab.Lab, o Options) ([]evidence.Reader, func() error, error) {
	questions := (&Etcd{}).Questions()
	members := lab.HostsWithRole(l, lab.RoleEtcd)
	member := o.EtcdMember
	if member == "" && len(members) > 0 {
		member = members[0].Name()
	}
	if member == "" {
		member = "member"
	}
	unavailable := func(why string) []evidence.Reader {
		return []evidence.Reader{
			NewUnavailable(evidence.Source("etcd/"+member+"/"+string(Serializable)), questions, why),
			NewUnavailable(evidence.Source("etcd/"+member+"/"+string(Linearizable)), questions, why),
		}
	}
	ea, ok := l.(lab.EtcdAccess)
	if !ok {
		return unavailable("not readable in this lab: it offers no etcd client access (lab.EtcdAccess)"), nil, nil
	}
	endpoints, tlsConfig, err := ea.EtcdClientConfig()
	if err != nil {
		return unavailable("etcd client config: " + err.Error()), nil, nil
	}
	idx := -1
	for i, h := range members {
		if h.Name() == member {
			idx = i
		}
	}
	if o.EtcdMember != "" && idx < 0 {
		return nil, nil, fmt.Errorf("etcd source: %s is not an etcd host of lab %s", o.EtcdMember, l.Info().Name)
	}
	if idx < 0 || idx >= len(endpoints) {
		return unavailable(fmt.Sprintf("the lab gives %d etcd endpoints for %d etcd hosts", len(endpoints), len(members))), nil, nil
	}
	c, err := NewEtcdClient(endpoints[idx], tlsConfig, o.RequestTimeout)
	if err != nil {
		return unavailable(err.Error()), nil, nil
	}
	return []evidence.Reader{
		NewEtcd(member, c, Serializable, o.Subjects),
		NewEtcd(member, c, Linearizable, o.Subjects),
	}, func() error { return closeEtcd(c) }, nil
}

func closeEtcd(c *clientv3.Client) error {
	if err := c.Close(); err != nil {
		return fmt.Errorf("closing etcd client: %w", err)
	}
	return nil
}

// ProxyFor sets p to read kube-proxy's mode as l's file declares it.
func ProxyFor(l lab.Lab, p *Proxy) *Proxy {
	if c := l.Config(); c != nil && c.Kubernetes.ProxyMode == lab.ProxyModeNFTables {
		return p.InNFTablesMode()
	}
	return p
}
