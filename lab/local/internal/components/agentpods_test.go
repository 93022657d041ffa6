package components

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/lab"
)

// With the agents as pods no host runs them as services; everything else
// is as in the services layout.
func TestAgentsAsPodsAreNoHostsServices(t *testing.T) {
	c, hosts := testCluster(t, "lab11-pods")
	if !c.AgentsAsPods() {
		t.Fatal("lab11-pods does not run its agents as pods")
	}
	for host, want := range map[string][]string{
		"cp1":     {"kube-apiserver", "keepalived", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet"},
		"worker1": {"containerd", "kubelet"},
	} {
		if got := names(ForHost(c, hosts[host])); !slices.Equal(got, want) {
			t.Errorf("%s runs %v, want %v", host, got, want)
		}
	}
	for host, want := range map[string][2]bool{"cp1": {true, false}, "worker1": {true, true}, "etcd1": {false, false}} {
		if got := [2]bool{RunsAgent(hosts[host], lab.ServiceKubeProxy), RunsAgent(hosts[host], lab.ServicePolicyAgent)}; got != want {
			t.Errorf("%s runs kube-proxy, kube-router: %v, want %v", host, got, want)
		}
	}
}

// The agents' objects are kubeadm's and kube-router's manifests': one
// service account each for every node, kube-proxy's role bound to its
// account, its ConfigMap's kubeconfig naming the control-plane endpoint
// and the pod's own token, both DaemonSets in the host's network
// namespace with the images named, kube-router on the workers alone; the
// per-node identities' bindings are gone.
func TestAgentPodAddonsAreKubeadms(t *testing.T) {
	c, _ := testCluster(t, "lab11-pods")
	a := c.AddonObjects("faultline.local/coredns:1.0")
	images := map[string]string{lab.ServiceKubeProxy: "faultline.local/kube-proxy:1.0", lab.ServicePolicyAgent: "faultline.local/kube-router:1.0"}
	if err := c.AgentPodAddons(&a, images, []string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS=5"}); err != nil {
		t.Fatal(err)
	}
	bound := map[string]string{}
	for _, b := range a.ClusterRoleBindings {
		for _, s := range b.Subjects {
			bound[s.Kind+"/"+s.Namespace+"/"+s.Name] = b.RoleRef.Name
		}
	}
	if bound["ServiceAccount/kube-system/kube-proxy"] != "system:node-proxier" || bound["ServiceAccount/kube-system/kube-router"] != "kube-router" {
		t.Errorf("bindings %v", bound)
	}
	for k := range bound {
		if strings.Contains(k, "faultline:kube-") {
			t.Errorf("a per-node identity is still bound where the agents run as pods: %s", k)
		}
	}
	var sas []string
	for _, s := range a.ServiceAccounts {
		sas = append(sas, s.Namespace+"/"+s.Name)
	}
	if !slices.Contains(sas, "kube-system/kube-proxy") || !slices.Contains(sas, "kube-system/kube-router") {
		t.Errorf("service accounts %v", sas)
	}
	var cm *corev1.ConfigMap
	for _, m := range a.ConfigMaps {
		if m.Name == "kube-proxy" {
			cm = m
		}
	}
	if cm == nil {
		t.Fatal("no kube-proxy ConfigMap")
	}
	kc := cm.Data["kubeconfig.conf"]
	for _, want := range []string{"server: https://10.231.14.10:6443", "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt"} {
		if !strings.Contains(kc, want) {
			t.Errorf("kubeconfig.conf lacks %q:\n%s", want, kc)
		}
	}
	var conf map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.conf"]), &conf); err != nil {
		t.Fatal(err)
	}
	if conf["mode"] != "iptables" || conf["clusterCIDR"] != "10.248.0.0/16" || conf["clientConnection"].(map[string]any)["kubeconfig"] != "/var/lib/kube-proxy/kubeconfig.conf" {
		t.Errorf("config.conf %v", conf)
	}
	if len(a.DaemonSets) != 2 {
		t.Fatalf("%d DaemonSets, want kube-proxy and kube-router", len(a.DaemonSets))
	}
	for _, ds := range a.DaemonSets {
		p, _ := lab.KubeadmAgentPod(map[string]string{"kube-proxy": lab.ServiceKubeProxy, "kube-router": lab.ServicePolicyAgent}[ds.Name])
		spec := ds.Spec.Template.Spec
		k, v, _ := strings.Cut(p.Selector, "=")
		if ds.Namespace != p.Namespace || ds.Spec.Template.Labels[k] != v || spec.ServiceAccountName != p.ServiceAccount || spec.Containers[0].Name != p.Container {
			t.Errorf("%s is not where lab.KubeadmAgentPod says: %+v", ds.Name, p)
		}
		if !spec.HostNetwork || !*spec.Containers[0].SecurityContext.Privileged {
			t.Errorf("%s: host network %v, privileged %v", ds.Name, spec.HostNetwork, *spec.Containers[0].SecurityContext.Privileged)
		}
		var env []string
		for _, e := range spec.Containers[0].Env {
			env = append(env, e.Name)
		}
		if !slices.Contains(env, "NODE_NAME") || !slices.Contains(env, "HTTP2_READ_IDLE_TIMEOUT_SECONDS") {
			t.Errorf("%s's environment %v", ds.Name, env)
		}
	}
	proxy, router := a.DaemonSets[0].Spec.Template.Spec, a.DaemonSets[1].Spec.Template.Spec
	if proxy.Containers[0].Image != images[lab.ServiceKubeProxy] || router.Containers[0].Image != images[lab.ServicePolicyAgent] {
		t.Errorf("images %s, %s", proxy.Containers[0].Image, router.Containers[0].Image)
	}
	if len(proxy.Tolerations) != 1 || proxy.Tolerations[0].Operator != corev1.TolerationOpExists || proxy.Tolerations[0].Key != "" {
		t.Errorf("kube-proxy tolerates %v, want everything as kubeadm's", proxy.Tolerations)
	}
	hostnames := router.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values
	if !slices.Equal(hostnames, []string{"worker1", "worker2", "worker3"}) {
		t.Errorf("kube-router placed on %v, want the workers", hostnames)
	}
	if !slices.Contains(router.Containers[0].Args, "--run-firewall=true") || !slices.Contains(router.Containers[0].Args, "--run-router=false") {
		t.Errorf("kube-router's args %v", router.Containers[0].Args)
	}
}

// A program that packed no agent image leaves a lab of pods nothing to
// run: said before anything starts.
func TestAgentImagesNameAMissingOne(t *testing.T) {
	c, _ := testCluster(t, "lab11-pods")
	c.imagesOnce.Do(func() { c.images = Images{Agents: map[string]lab.NodeImage{lab.ServiceKubeProxy: {Ref: "x"}}} })
	_, err := c.AgentImages()
	if err == nil || !strings.Contains(err.Error(), "no kube-router image") {
		t.Errorf("AgentImages: %v, want the missing kube-router image named", err)
	}
}
