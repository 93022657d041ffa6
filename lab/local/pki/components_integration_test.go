//go:build bins

package pki

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/faultline/faultline/internal/kubetest"
	"github.com/faultline/faultline/lab/local/binpaths"
)

func restConfigAt(t *testing.T, kubeconfig, host string) *rest.Config {
	t.Helper()
	_, rc := kubeconfigServer(t, kubeconfig)
	// The serving certificate names 127.0.0.1, which is where the test's
	// API server listens instead of the lab address.
	rc.Host = host
	rc.Timeout = 10 * time.Second
	return rc
}

func whoami(ctx context.Context, rc *rest.Config) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// The lab's certificates with the real etcd and kube-apiserver: etcd
// serving and checking client certificates, the API server reaching etcd
// with its client certificate, serving with its own, and authenticating the
// admin, a kubelet and a service-account token signed with the lab's key.
func TestCertificatesWorkWithEtcdAndAPIServer(t *testing.T) {
	bins, err := binpaths.Locate(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadLab(t, "pair")
	work := t.TempDir()
	f := mustEnsure(t, cfg, filepath.Join(work, "pki"))
	etcdCerts := f.Etcd["pair-cp"]
	cp := f.ControlPlane["pair-cp"]

	clientPort, peerPort, apiPort := kubetest.FreePort(t), kubetest.FreePort(t), kubetest.FreePort(t)
	clientURL := "https://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "https://127.0.0.1:" + strconv.Itoa(peerPort)
	kubetest.Start(t, "etcd", bins.Etcd,
		"--name=pair-cp", "--data-dir="+filepath.Join(work, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=pair-cp="+peerURL, "--initial-cluster-state=new",
		"--cert-file="+etcdCerts.Server.Cert, "--key-file="+etcdCerts.Server.Key,
		"--client-cert-auth", "--trusted-ca-file="+f.CA.Cert,
		"--peer-cert-file="+etcdCerts.Peer.Cert, "--peer-key-file="+etcdCerts.Peer.Key,
		"--peer-client-cert-auth", "--peer-trusted-ca-file="+f.CA.Cert,
	)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out []byte
	for {
		out, err = exec.CommandContext(ctx, bins.Etcdctl, "--endpoints="+clientURL,
			"--cacert="+f.CA.Cert, "--cert="+f.EtcdAdmin.Cert, "--key="+f.EtcdAdmin.Key,
			"endpoint", "health").CombinedOutput()
		if err == nil && bytes.Contains(out, []byte("is healthy")) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("etcd never healthy with the etcd-admin certificate: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Without a client certificate etcd refuses.
	if out, err := exec.CommandContext(ctx, bins.Etcdctl, "--endpoints="+clientURL, "--cacert="+f.CA.Cert,
		"--dial-timeout=3s", "--command-timeout=3s", "endpoint", "health").CombinedOutput(); err == nil {
		t.Errorf("etcd answered a client without a certificate:\n%s", out)
	}

	kubetest.Start(t, "kube-apiserver", bins.KubeAPIServer,
		"--bind-address=127.0.0.1", "--advertise-address=10.231.2.11", "--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(work, "apiserver-certs"),
		"--etcd-servers="+clientURL, "--etcd-cafile="+f.CA.Cert,
		"--etcd-certfile="+f.APIServerEtcdClient.Cert, "--etcd-keyfile="+f.APIServerEtcdClient.Key,
		"--tls-cert-file="+cp.APIServer.Cert, "--tls-private-key-file="+cp.APIServer.Key,
		"--client-ca-file="+f.CA.Cert,
		"--kubelet-client-certificate="+f.APIServerKubeletClient.Cert, "--kubelet-client-key="+f.APIServerKubeletClient.Key,
		"--kubelet-certificate-authority="+f.CA.Cert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+f.ServiceAccountPub, "--service-account-signing-key-file="+f.ServiceAccountKey,
		"--service-cluster-ip-range="+cfg.Network.Services,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--requestheader-client-ca-file="+f.FrontProxyCA.Cert, "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+f.FrontProxyClient.Cert, "--proxy-client-key-file="+f.FrontProxyClient.Key,
	)

	host := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	admin := restConfigAt(t, cp.AdminKubeconfig, host)
	for {
		cs, err := kubernetes.NewForConfig(admin)
		if err != nil {
			t.Fatal(err)
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("kube-apiserver never ready: %v %s", err, body)
		}
		time.Sleep(time.Second)
	}

	for _, c := range []struct {
		kubeconfig string
		user       string
		group      string
	}{
		{cp.AdminKubeconfig, "faultline-admin", "system:masters"},
		{f.Nodes["pair-worker"].Kubeconfig, "system:node:pair-worker", "system:nodes"},
		{cp.ControllerManagerKubeconfig, "system:kube-controller-manager", "system:authenticated"},
		{cp.SchedulerKubeconfig, "system:kube-scheduler", "system:authenticated"},
		{f.Nodes["pair-worker"].KubeProxyKubeconfig, KubeProxyUser("pair-worker"), KubeProxyGroup},
		{f.Nodes["pair-worker"].KubeRouterKubeconfig, KubeRouterUser("pair-worker"), KubeRouterGroup},
	} {
		info, err := whoami(ctx, restConfigAt(t, c.kubeconfig, host))
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(c.kubeconfig), err)
			continue
		}
		if info.Username != c.user || !strings.Contains(strings.Join(info.Groups, ","), c.group) {
			t.Errorf("%s authenticates as %s %v, want %s in %s", filepath.Base(c.kubeconfig), info.Username, info.Groups, c.user, c.group)
		}
	}

	// A service-account token signed with the lab's key is accepted.
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	var sa *corev1.ServiceAccount
	for {
		// The default namespace may take a moment to exist.
		sa, err = cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pki-check"}}, metav1.CreateOptions{})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatalf("creating a service account: %v", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	tokenConfig := rest.AnonymousClientConfig(admin)
	tokenConfig.BearerToken = tr.Status.Token
	info, err := whoami(ctx, tokenConfig)
	if err != nil {
		t.Fatalf("authenticating with a service-account token: %v", err)
	}
	if want := "system:serviceaccount:default:pki-check"; info.Username != want {
		t.Errorf("token authenticates as %s, want %s", info.Username, want)
	}

	// A certificate from another lab's CA is refused.
	other := mustEnsure(t, cfg, filepath.Join(work, "other-pki"))
	stranger := restConfigAt(t, other.AdminKubeconfig, host)
	stranger.TLSClientConfig.CAData = nil
	stranger.TLSClientConfig.CAFile = f.CA.Cert
	if info, err := whoami(ctx, stranger); err == nil {
		t.Errorf("a certificate from another CA authenticated as %s %v", info.Username, info.Groups)
	}
	fmt.Fprintln(os.Stderr, "etcd and kube-apiserver accepted the lab PKI")
}
