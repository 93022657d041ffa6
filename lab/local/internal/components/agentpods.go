package components

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/lab"
)

// The node agents as DaemonSet pods (kubernetes.agents: pods), laid out
// as a kubeadm cluster has them: kube-proxy as kubeadm deploys it
// (cmd/kubeadm/app/phases/addons/proxy), kube-router as its own
// kubeadm-kuberouter.yaml does, with only its firewall as the lab's host
// service runs it. Both with the host's network namespace, so what they
// program is the node's, read there as before.

// AgentsAsPods says whether the lab runs its node agents as pods.
func (c *Cluster) AgentsAsPods() bool {
	return c.Config.Kubernetes.AgentsLayout() == lab.AgentsAsPods
}

// RunsAgent says whether the host runs the agent, in either layout:
// kube-proxy on every node, the policy agent on every worker.
func RunsAgent(h Host, agent string) bool {
	switch agent {
	case lab.ServiceKubeProxy:
		return h.Node != nil
	case lab.ServicePolicyAgent:
		return h.Node != nil && h.HasRole(lab.RoleWorker)
	}
	return false
}

// Agents are the node agents the lab runs.
var Agents = []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent}

// Names of kubeadm's kube-proxy objects (cmd/kubeadm/app/constants and
// phases/addons/proxy).
const (
	kubeProxyConfigKey       = "config.conf"
	kubeProxyKubeconfigKey   = "kubeconfig.conf"
	kubeProxyBindingName     = "kubeadm:node-proxier"
	kubeProxyClusterRole     = "system:node-proxier"
	kubeProxyConfigMountPath = "/var/lib/kube-proxy"
	// nodeBootstrapGroup is kubeadm's bootstrap token group, which may
	// read kube-proxy's ConfigMap; the lab joins no node by token, so
	// the binding is there only as kubeadm makes it.
	nodeBootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"
	// serviceAccountDir is where the kubelet mounts a pod's
	// service-account token and the cluster's CA.
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	xtablesLock       = "/run/xtables.lock"
)

// AgentImages are the agents' image references by agent, from the node
// images; an error names an agent the program packed no image of.
func (c *Cluster) AgentImages() (map[string]string, error) {
	imgs, err := c.Images()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, a := range Agents {
		im, ok := imgs.Agents[a]
		if !ok {
			return nil, fmt.Errorf("the node images hold no %s image, which kubernetes.agents: %s needs (make bins builds it into the binary cache, and the images pack it)", a, lab.AgentsAsPods)
		}
		out[a] = im.Ref
	}
	return out, nil
}

// controlPlaneEndpoint is the API servers' address as kubeadm's
// controlPlaneEndpoint gives it: the virtual address, else the one
// control-plane host.
func (c *Cluster) controlPlaneEndpoint() string {
	port := strconv.Itoa(c.Config.Network.APIServerPort)
	if c.Config.Network.VirtualIP != "" {
		return "https://" + net.JoinHostPort(c.Config.Network.VirtualIP, port)
	}
	cps := c.hostsWithRole(lab.RoleControlPlane)
	return "https://" + net.JoinHostPort(cps[0].Address, port)
}

// kubeProxyConfigMapData is the ConfigMap kubeadm writes: a kubeconfig
// naming the control-plane endpoint and the pod's own token, and the
// KubeProxyConfiguration (kubeadm's defaults with what the lab's host
// service sets: the mode, the cluster CIDR, no change to the machine's
// conntrack table size).
func (c *Cluster) kubeProxyConfigMapData() (map[string]string, error) {
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: %[1]s/ca.crt
    server: %[2]s
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: %[1]s/token
`, serviceAccountDir, c.controlPlaneEndpoint())
	cfg := map[string]any{
		"apiVersion":       "kubeproxy.config.k8s.io/v1alpha1",
		"kind":             "KubeProxyConfiguration",
		"clientConnection": map[string]any{"kubeconfig": kubeProxyConfigMountPath + "/" + kubeProxyKubeconfigKey},
		"mode":             c.proxyMode(),
		"clusterCIDR":      c.Plan.Pods.String(),
		"bindAddress":      "0.0.0.0",
		// kubeadm leaves both to kube-proxy's defaults:
		// 0.0.0.0:10256 and 127.0.0.1:10249.
		"healthzBindAddress": fmt.Sprintf("0.0.0.0:%d", kubeProxyHealthPort),
		"metricsBindAddress": "127.0.0.1:10249",
		"conntrack":          map[string]any{"maxPerCore": 0},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return map[string]string{kubeProxyKubeconfigKey: kubeconfig, kubeProxyConfigKey: string(b)}, nil
}

func agentPod(agent string) lab.AgentPod {
	p, _ := lab.KubeadmAgentPod(agent)
	return p
}

// podLabels are the pods' labels: the one the agent's pods are found by.
func podLabels(p lab.AgentPod) map[string]string {
	k, v, _ := strings.Cut(p.Selector, "=")
	return map[string]string{k: v}
}

// agentEnv is what an agent's container starts with: its node's name, as
// both DaemonSets give it, and the timers' HTTP/2 settings the host
// services get.
func (c *Cluster) agentEnv(profileEnv []string) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	for _, kv := range profileEnv {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	return env
}

// xtablesLockVolume is the host's iptables lock, which both DaemonSets
// share with the node.
func xtablesLockVolume() (corev1.Volume, corev1.VolumeMount) {
	t := corev1.HostPathFileOrCreate
	return corev1.Volume{Name: "xtables-lock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: xtablesLock, Type: &t}}},
		corev1.VolumeMount{Name: "xtables-lock", MountPath: xtablesLock}
}

// AgentPodAddons adds the agents' service accounts, RBAC, configuration
// and DaemonSets. kubeadm's and kube-router's manifests also mount the
// host's /lib/modules (read-only, for kernel modules the agents may
// load): this machine has no loadable modules and no such directory, and
// a hostPath to a missing directory fails the container, so the lab
// leaves it out. kube-router's manifest also runs an init container that
// installs its CNI configuration in the host's /etc/cni/net.d and runs
// with the host's PID namespace, both for its router; the lab runs its
// firewall alone and its nodes keep their own CNI, so both are left out.
func (c *Cluster) AgentPodAddons(a *Addons, images map[string]string, profileEnv []string) error {
	proxy, router := agentPod(lab.ServiceKubeProxy), agentPod(lab.ServicePolicyAgent)
	data, err := c.kubeProxyConfigMapData()
	if err != nil {
		return err
	}
	sa := func(p lab.AgentPod) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccount, Namespace: p.Namespace}
	}
	a.ServiceAccounts = append(a.ServiceAccounts,
		&corev1.ServiceAccount{ObjectMeta: meta(proxy.ServiceAccount, proxy.Namespace, nil)},
		&corev1.ServiceAccount{ObjectMeta: meta(router.ServiceAccount, router.Namespace, nil)})
	a.ClusterRoles = append(a.ClusterRoles, &rbacv1.ClusterRole{
		// kube-router's own ClusterRole (kubeadm-kuberouter.yaml).
		ObjectMeta: meta("kube-router", "", nil),
		Rules: []rbacv1.PolicyRule{
			readRule("", "namespaces", "pods", "services", "nodes", "endpoints"),
			readRule("networking.k8s.io", "networkpolicies"),
			readRule("extensions", "networkpolicies"),
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
			{APIGroups: []string{""}, Resources: []string{"services/status"}, Verbs: []string{"update"}},
			readRule("discovery.k8s.io", "endpointslices"),
		},
	})
	a.ClusterRoleBindings = append(a.ClusterRoleBindings,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: meta(kubeProxyBindingName, "", nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeProxyClusterRole},
			Subjects:   []rbacv1.Subject{sa(proxy)},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: meta("kube-router", "", nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kube-router"},
			Subjects:   []rbacv1.Subject{sa(router)},
		})
	a.Roles = append(a.Roles, &rbacv1.Role{
		ObjectMeta: meta(proxy.DaemonSet, proxy.Namespace, nil),
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{proxy.DaemonSet}}},
	})
	a.RoleBindings = append(a.RoleBindings, &rbacv1.RoleBinding{
		ObjectMeta: meta(proxy.DaemonSet, proxy.Namespace, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: proxy.DaemonSet},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: nodeBootstrapGroup}},
	})
	a.ConfigMaps = append(a.ConfigMaps, &corev1.ConfigMap{
		ObjectMeta: meta(proxy.DaemonSet, proxy.Namespace, map[string]string{"app": "kube-proxy"}),
		Data:       data,
	})
	lockVol, lockMount := xtablesLockVolume()
	privileged := true
	a.DaemonSets = append(a.DaemonSets, &appsv1.DaemonSet{
		ObjectMeta: meta(proxy.DaemonSet, proxy.Namespace, podLabels(proxy)),
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: podLabels(proxy)},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels(proxy)},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-node-critical",
					HostNetwork:        true,
					ServiceAccountName: proxy.ServiceAccount,
					Containers: []corev1.Container{{
						Name:            proxy.Container,
						Image:           images[lab.ServiceKubeProxy],
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"/usr/local/bin/kube-proxy", "--config=" + kubeProxyConfigMountPath + "/" + kubeProxyConfigKey, "--hostname-override=$(NODE_NAME)"},
						SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
						Env:             c.agentEnv(profileEnv),
						VolumeMounts:    []corev1.VolumeMount{{Name: "kube-proxy", MountPath: kubeProxyConfigMountPath}, lockMount},
					}},
					Volumes: []corev1.Volume{
						{Name: "kube-proxy", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: proxy.DaemonSet}}}},
						lockVol,
					},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
				},
			},
		},
	})
	// The policy agent runs where the lab's host service does, on the
	// workers, which the nodes' labels do not tell apart from a
	// control-plane host that is also a worker: the DaemonSet names them.
	workers := c.workerNames()
	a.DaemonSets = append(a.DaemonSets, &appsv1.DaemonSet{
		ObjectMeta: meta(router.DaemonSet, router.Namespace, map[string]string{"k8s-app": "kube-router", "tier": "node"}),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: podLabels(router)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": "kube-router", "tier": "node"}},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-node-critical",
					HostNetwork:        true,
					ServiceAccountName: router.ServiceAccount,
					Containers: []corev1.Container{{
						Name:            router.Container,
						Image:           images[lab.ServicePolicyAgent],
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"/usr/local/bin/kube-router"},
						Args: []string{
							"--run-router=false", "--run-firewall=true", "--run-service-proxy=false",
							"--service-cluster-ip-range=" + c.Plan.Services.String(),
							fmt.Sprintf("--health-port=%d", KubeRouterHealthPort),
							fmt.Sprintf("--metrics-port=%d", KubeRouterMetricsPort),
						},
						SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
						Env:             c.agentEnv(profileEnv),
						VolumeMounts:    []corev1.VolumeMount{lockMount},
						// The manifest's: a kube-router that stops answering
						// is killed and started again by its kubelet.
						LivenessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(KubeRouterHealthPort)}},
							InitialDelaySeconds: 10,
							PeriodSeconds:       3,
						},
					}},
					Volumes: []corev1.Volume{lockVol},
					Tolerations: []corev1.Toleration{
						{Effect: corev1.TaintEffectNoSchedule, Operator: corev1.TolerationOpExists},
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Effect: corev1.TaintEffectNoExecute, Operator: corev1.TolerationOpExists},
					},
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: workers}},
						}}},
					}},
				},
			},
		},
	})
	return nil
}

// AgentPodReady returns nil once the agent's pod on h serves its health
// endpoint, as the host service's readiness probe asks it.
func AgentPodReady(ctx context.Context, h Host, agent string) error {
	switch agent {
	case lab.ServiceKubeProxy:
		return tcpReady(ctx, h.Address, kubeProxyHealthPort)
	case lab.ServicePolicyAgent:
		return httpOK(ctx, fmt.Sprintf("http://%s:%d/healthz", h.Address, KubeRouterHealthPort))
	}
	return fmt.Errorf("no agent %q", agent)
}
