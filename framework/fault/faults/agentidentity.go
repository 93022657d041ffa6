package faults

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
)

// Every node's pod of an agent run as a DaemonSet authenticates as one
// service account. What tells one node's from another's is the token the
// kubelet gets for each pod: bound to the pod, and, since Kubernetes 1.30
// (ServiceAccountTokenPodNodeInfo, beta and on by default in 1.30 and
// 1.31, GA from 1.32), carrying the pod's node, which the API server puts
// into the user's extra as authentication.kubernetes.io/node-name. An
// authorizer's match condition reads it there.

// NodeNameExtra is the key of the user's extra under which the API
// server gives the node a pod-bound service-account token's pod runs on.
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// probeTokenSeconds is how long the tokens the fault asks for live: the
// shortest the API server issues.
const probeTokenSeconds = 600

// podAgentIdentity is who the agent's pod on its node authenticates as:
// its service account, told from the other nodes' by the node name its
// token carries. It asks the API server for a token bound to the pod (as
// the kubelet does for the pod's own) and has the API server review it;
// a server that does not put the node name into the user is refused as
// unsupported, before anything is changed. The token is returned for a
// probe to make the agent's requests with.
func podAgentIdentity(ctx context.Context, cs kubernetes.Interface, r lab.AgentRun) (lab.Identity, string, error) {
	p, err := findAgentPod(ctx, cs, r)
	if err != nil {
		return lab.Identity{}, "", err
	}
	exp := int64(probeTokenSeconds)
	tr, err := cs.CoreV1().ServiceAccounts(r.Pod.Namespace).CreateToken(ctx, r.Pod.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: types.UID(p.UID)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return lab.Identity{}, "", fmt.Errorf("asking for a token of %s/%s bound to %s's pod %s: %w", r.Pod.Namespace, r.Pod.ServiceAccount, r.Agent, p.Name, err)
	}
	rev, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	if err != nil {
		return lab.Identity{}, "", fmt.Errorf("reviewing the token bound to %s's pod %s: %w", r.Agent, p.Name, err)
	}
	id, err := identityFromReview(rev.Status, r)
	if err != nil {
		return lab.Identity{}, "", err
	}
	return id, tr.Status.Token, nil
}

// identityFromReview is the identity of r's pod on r.Node from the API
// server's review of a token bound to it: its service account's user and
// groups, and the node name alone of its extra (the pod's name and UID
// change when the DaemonSet makes the pod again; the node does not).
func identityFromReview(st authenticationv1.TokenReviewStatus, r lab.AgentRun) (lab.Identity, error) {
	want := r.Pod.ServiceAccountUser()
	switch {
	case !st.Authenticated:
		return lab.Identity{}, fmt.Errorf("the API server does not authenticate a token bound to %s's pod on %s: %s", r.Agent, r.Node, st.Error)
	case st.User.Username != want:
		return lab.Identity{}, fmt.Errorf("a token bound to %s's pod on %s authenticates as %q, not %q", r.Agent, r.Node, st.User.Username, want)
	}
	nodes := st.User.Extra[NodeNameExtra]
	if !slices.Equal([]string(nodes), []string{r.Node}) {
		return lab.Identity{}, fmt.Errorf("refusing one node's %s: %w: every node's %s authenticates as %s, and the API server reads node name %q from a token bound to its pod on %s, not %q: telling one node's from the others' needs the node name in pod-bound tokens (%s; Kubernetes 1.30 and 1.31 with ServiceAccountTokenPodNodeInfo on, as by default; always from 1.32)",
			r.Agent, lab.ErrUnsupported, r.Agent, want, nodes, r.Node, r.Node, NodeNameExtra)
	}
	id := lab.Identity{User: want, Groups: st.User.Groups, Extra: map[string][]string{NodeNameExtra: {r.Node}}}
	if err := checkIdentity(id); err != nil {
		return lab.Identity{}, err
	}
	return id, nil
}

// apiServerTokenClient is a client of the API server on h alone that
// presents token and nothing else of the admin's kubeconfig but how to
// trust the server.
func apiServerTokenClient(l lab.Lab, h lab.Host, token string) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig(h.Name())
	if err != nil {
		return nil, fmt.Errorf("getting a kubeconfig for the API server on %s: %w", h.Name(), err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	cfg = rest.AnonymousClientConfig(cfg)
	cfg.BearerToken = token
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// kubernetesServiceAddress is the address (ip:port) of the default
// namespace's kubernetes Service, which a pod's in-cluster configuration
// dials; "" where it has no cluster address.
func kubernetesServiceAddress(ctx context.Context, l lab.Lab) (string, error) {
	cs, err := kubeClient(l)
	if err != nil {
		return "", err
	}
	svc, err := cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the kubernetes Service: %w", err)
	}
	if net.ParseIP(svc.Spec.ClusterIP) == nil || len(svc.Spec.Ports) == 0 {
		return "", nil
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))), nil
}
