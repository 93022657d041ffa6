package components

import (
	"slices"

	"fmt"
	"github.com/faultline/faultline/lab/local/csidriver"
	storagev1 "k8s.io/api/storage/v1"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/pki"
)

// The cluster DNS the lab deploys: CoreDNS as a kube-system Deployment of
// two behind the kube-dns Service, the kubelets' clusterDNS (one where the
// lab has one worker: two instances never share a node).
const (
	CoreDNSName        = "coredns"
	DNSServiceName     = "kube-dns"
	CoreDNSReplicas    = 2
	CoreDNSReadyPort   = 8181
	CoreDNSHealthPort  = 8080
	CoreDNSMetricsPort = 9153
	// CoreDNSTTL is the TTL of every answer the kubernetes plugin gives,
	// and the longest the cache plugin keeps one: the lag a reader of the
	// answers must allow beside the watch's.
	CoreDNSTTL = 5
)

// Addons are the cluster objects the lab creates once its API servers
// serve: the node agents' RBAC (their identities are the lab's own, see
// pki) and the cluster DNS.
type Addons struct {
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
	ServiceAccounts     []*corev1.ServiceAccount
	ConfigMaps          []*corev1.ConfigMap
	Services            []*corev1.Service
	Deployments         []*appsv1.Deployment
	// DaemonSets are the node agents', where they run as pods
	// (AgentPodAddons).
	DaemonSets []*appsv1.DaemonSet
	// CSIDrivers and StorageClasses are the CSI drivers' objects, on labs
	// with a storage host.
	CSIDrivers     []*storagev1.CSIDriver
	StorageClasses []*storagev1.StorageClass
}

// labelManaged marks what the lab created, so a reader can tell it from
// what a suite installs.
var labelManaged = map[string]string{"app.kubernetes.io/managed-by": "faultline-lab"}

func meta(name, namespace string, extra map[string]string) metav1.ObjectMeta {
	labels := map[string]string{}
	for k, v := range labelManaged {
		labels[k] = v
	}
	for k, v := range extra {
		labels[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

func readRule(group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch"}}
}

// Corefile is CoreDNS's configuration: the cluster domain from the API,
// answers cached no longer than their TTL, nothing forwarded (the lab has
// no upstream), health, readiness and metrics on their own ports.
func Corefile() string {
	return fmt.Sprintf(`.:53 {
    errors
    health :%d
    ready :%d
    kubernetes %s in-addr.arpa ip6.arpa {
        pods insecure
        ttl %d
    }
    prometheus :%d
    cache %d
    reload
}
`, CoreDNSHealthPort, CoreDNSReadyPort, ClusterDomain, CoreDNSTTL, CoreDNSMetricsPort, CoreDNSTTL)
}

// CoreDNSImage finds the cluster DNS image among the node images: the
// reference whose name ends in /coredns.
func (c *Cluster) CoreDNSImage() (string, error) {
	imgs, err := c.Images()
	if err != nil {
		return "", err
	}
	for _, r := range imgs.Refs {
		name, _, _ := strings.Cut(r[strings.LastIndex(r, "/")+1:], ":")
		if name == CoreDNSName {
			return r, nil
		}
	}
	return "", fmt.Errorf("the node images hold no CoreDNS image (make bins builds CoreDNS into the binary cache, and the images pack it)")
}

// AddonObjects are the lab's addons; image is the CoreDNS image the
// nodes hold.
func (c *Cluster) AddonObjects(image string) Addons {
	dnsLabels := map[string]string{"k8s-app": DNSServiceName}
	var a Addons
	a.ClusterRoles = []*rbacv1.ClusterRole{
		{
			ObjectMeta: meta("faultline:coredns", "", nil),
			Rules: []rbacv1.PolicyRule{
				readRule("", "endpoints", "services", "pods", "namespaces"),
				readRule("discovery.k8s.io", "endpointslices"),
			},
		},
	}
	bind := func(name, role string, subject rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: meta(name, "", nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}
	}
	a.ClusterRoleBindings = []*rbacv1.ClusterRoleBinding{
		bind("faultline:coredns", "faultline:coredns", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: CoreDNSName, Namespace: metav1.NamespaceSystem}),
	}
	if !c.AgentsAsPods() {
		// The host services' identities, one per node (see pki); pods
		// run as service accounts instead (AgentPodAddons).
		a.ClusterRoles = append(a.ClusterRoles, &rbacv1.ClusterRole{
			// What kube-router's firewall lists and watches, and its node.
			ObjectMeta: meta("faultline:kube-router", "", nil),
			Rules: []rbacv1.PolicyRule{
				readRule("", "namespaces", "pods", "services", "nodes", "endpoints"),
				readRule("networking.k8s.io", "networkpolicies"),
				readRule("discovery.k8s.io", "endpointslices"),
			},
		})
		a.ClusterRoleBindings = append(a.ClusterRoleBindings,
			bind("faultline:kube-router", "faultline:kube-router", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: pki.KubeRouterGroup}),
			// The role Kubernetes bootstraps for kube-proxy (bound there to
			// the one user system:kube-proxy), for every node's own
			// identity.
			bind("faultline:kube-proxies", "system:node-proxier", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: pki.KubeProxyGroup}))
	}
	a.ServiceAccounts = []*corev1.ServiceAccount{{ObjectMeta: meta(CoreDNSName, metav1.NamespaceSystem, nil)}}
	a.ConfigMaps = []*corev1.ConfigMap{{
		ObjectMeta: meta(CoreDNSName, metav1.NamespaceSystem, nil),
		Data:       map[string]string{"Corefile": Corefile()},
	}}
	a.Services = []*corev1.Service{{
		ObjectMeta: meta(DNSServiceName, metav1.NamespaceSystem, dnsLabels),
		Spec: corev1.ServiceSpec{
			Selector:  dnsLabels,
			ClusterIP: c.Plan.ServiceIP(DNSServiceIPIndex).String(),
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: CoreDNSMetricsPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(CoreDNSMetricsPort)},
			},
		},
	}}
	replicas := int32(max(1, min(CoreDNSReplicas, len(c.workerNames()))))
	a.Deployments = []*appsv1.Deployment{{
		ObjectMeta: meta(CoreDNSName, metav1.NamespaceSystem, dnsLabels),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: dnsLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: dnsLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: CoreDNSName,
					// The cluster's resolver cannot resolve through itself.
					DNSPolicy:                     corev1.DNSDefault,
					TerminationGracePeriodSeconds: new(int64(5)),
					// Never two on one node: each instance's answers are
					// read on their own, and losing one node leaves one.
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							TopologyKey:   corev1.LabelHostname,
							LabelSelector: &metav1.LabelSelector{MatchLabels: dnsLabels},
						}},
					}},
					Volumes: []corev1.Volume{{
						Name: "config",
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: CoreDNSName},
						}},
					}},
					Containers: []corev1.Container{{
						Name:            CoreDNSName,
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: CoreDNSMetricsPort, Protocol: corev1.ProtocolTCP},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(CoreDNSReadyPort)}},
							PeriodSeconds: 1,
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(CoreDNSHealthPort)}},
							PeriodSeconds:    10,
							FailureThreshold: 5,
						},
						SecurityContext: &corev1.SecurityContext{
							// Port 53 without root.
							Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}}
	if _, ok := c.StorageHost(); ok {
		a.ClusterRoles = append(a.ClusterRoles, &rbacv1.ClusterRole{
			ObjectMeta: meta(csidriver.ControllerRoleName, "", nil),
			Rules:      csidriver.ControllerRules(),
		})
		a.ClusterRoleBindings = append(a.ClusterRoleBindings,
			bind(csidriver.ControllerRoleName, csidriver.ControllerRoleName, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: pki.CSIControllerUser}))
		for _, d := range csidriver.CSIDrivers() {
			d.Labels = labelManaged
			a.CSIDrivers = append(a.CSIDrivers, d)
		}
		for _, sc := range csidriver.StorageClasses() {
			sc.Labels = labelManaged
			a.StorageClasses = append(a.StorageClasses, sc)
		}
	}
	return a
}

// workerNames are the hosts with the worker role, in the lab file's order:
// where pods other than the control plane's run (a host that is only
// control plane is tainted NoSchedule).
func (c *Cluster) workerNames() []string {
	var out []string
	for _, h := range c.Config.Hosts {
		if slices.Contains(h.Roles, lab.RoleWorker) {
			out = append(out, h.Name)
		}
	}
	return out
}
