package splitbrain

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/program"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/lab"
)

func electorLab() *lab.Config {
	return &lab.Config{Name: "lab11s", Network: lab.Network{APIServerPort: 6443}, Hosts: []lab.HostConfig{
		{Name: "cp1", Roles: []lab.Role{lab.RoleControlPlane}, Address: "10.231.13.21"},
		{Name: "cp3", Roles: []lab.Role{lab.RoleControlPlane}, Address: "10.231.13.23"},
		{Name: "worker1", Roles: []lab.Role{lab.RoleWorker}, Address: "10.231.13.31"},
	}}
}

var electorInfo = lab.StorageInfo{HistoryEndpoints: []string{"http://10.231.13.41:2379"}}

func TestElectorConfigFromTheLabels(t *testing.T) {
	c, err := ElectorConfigOf([]string{"paper:splitbrain", "workload:elector", "fencing:lease-transitions", "apiserver-a:cp1", "apiserver-b:cp3"}, electorLab(), electorInfo)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fencing != "lease-transitions" || c.ServerA != "https://10.231.13.21:6443" || c.ServerB != "https://10.231.13.23:6443" {
		t.Fatalf("config %+v", c)
	}
	c, err = ElectorConfigOf([]string{"fencing:none"}, electorLab(), electorInfo)
	if err != nil || c.Fencing != "none" || c.ServerA != "" || c.ServerB != "" {
		t.Fatalf("unpinned: %+v, %v", c, err)
	}
}

func TestElectorConfigRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		labels []string
		info   lab.StorageInfo
		want   string
	}{
		"no fencing":      {[]string{"workload:elector"}, electorInfo, "needs one fencing: label"},
		"two fencings":    {[]string{"fencing:none", "fencing:lease-transitions"}, electorInfo, "the scenario has 2"},
		"unknown fencing": {[]string{"fencing:epoch"}, electorInfo, "label fencing:epoch"},
		"no store":        {[]string{"fencing:none"}, lab.StorageInfo{}, "no external store"},
		"not a host":      {[]string{"fencing:none", "apiserver-b:cp9"}, electorInfo, `no host "cp9"`},
		"a worker":        {[]string{"fencing:none", "apiserver-a:worker1"}, electorInfo, "runs no API server"},
		"two pins":        {[]string{"fencing:none", "apiserver-a:cp1", "apiserver-a:cp3"}, electorInfo, "more than one apiserver-a:"},
	} {
		if _, err := ElectorConfigOf(c.labels, electorLab(), c.info); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestElectorDeploymentsPinNodesAndServers(t *testing.T) {
	deps := ElectorDeployments(ElectorConfig{Fencing: "none", Endpoints: []string{"http://s:2379", "http://t:2379"}, ServerB: "https://10.231.13.23:6443"})
	if len(deps) != 2 {
		t.Fatalf("%d deployments", len(deps))
	}
	for i, want := range []struct{ name, node, server string }{{ElectorA, ElectorNodeA, ""}, {ElectorB, ElectorNodeB, "https://10.231.13.23:6443"}} {
		d := deps[i]
		spec := d.Spec.Template.Spec
		if d.Name != want.name || d.Namespace != Namespace || *d.Spec.Replicas != 1 || spec.ServiceAccountName != Elector {
			t.Errorf("deployment %d: %s/%s, %d replicas, service account %q", i, d.Namespace, d.Name, *d.Spec.Replicas, spec.ServiceAccountName)
		}
		term := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
		if term.Key != "kubernetes.io/hostname" || len(term.Values) != 1 || term.Values[0] != want.node {
			t.Errorf("%s: node affinity %+v, want %s", d.Name, term, want.node)
		}
		if d.Spec.Template.Labels["app"] != want.name || d.Spec.Selector.MatchLabels["app"] != want.name {
			t.Errorf("%s: labels %v, selector %v", d.Name, d.Spec.Template.Labels, d.Spec.Selector.MatchLabels)
		}
		if len(spec.Tolerations) != 2 || *spec.Tolerations[0].TolerationSeconds != 3600 {
			t.Errorf("%s: tolerations %+v", d.Name, spec.Tolerations)
		}
		ctr := spec.Containers[0]
		args := strings.Join(ctr.Args, " ")
		for _, a := range []string{"--fencing=none", "--store-endpoints=http://s:2379,http://t:2379", "--store-prefix=" + ElectorDataPrefix, "--history-prefix=" + ElectorHistoryPrefix, "--lease-name=elector", "--lease-duration=6s", "--renew-deadline=4s", "--retry-period=1s"} {
			if !strings.Contains(args, a) {
				t.Errorf("%s: args %q lack %q", d.Name, args, a)
			}
		}
		if got := strings.Contains(args, "--server="); got != (want.server != "") || (want.server != "" && !strings.Contains(args, "--server="+want.server)) {
			t.Errorf("%s: args %q, want server %q", d.Name, args, want.server)
		}
		if ctr.LivenessProbe != nil || ctr.ReadinessProbe == nil {
			t.Errorf("%s: a liveness probe would restart a frozen leader; readiness %v", d.Name, ctr.ReadinessProbe)
		}
		envs := map[string]string{}
		for _, e := range ctr.Env {
			envs[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
		if envs[program.EnvPodName] != "metadata.name" || envs[program.EnvPodUID] != "metadata.uid" || envs["POD_NAMESPACE"] != "metadata.namespace" || envs[program.EnvNodeName] != "spec.nodeName" {
			t.Errorf("%s: env %v", d.Name, envs)
		}
	}
	// The timers follow client-go's rule, which the program checks too.
	if !(ElectorLeaseDuration > ElectorRenewDeadline && float64(ElectorRenewDeadline) > 1.2*float64(ElectorRetryPeriod)) {
		t.Error("the elector's timers break client-go's rule")
	}
}

func TestElectorRBACAllowsOnlyLeases(t *testing.T) {
	sa, role, binding := ElectorRBAC()
	r := role.Rules
	if len(r) != 1 || r[0].APIGroups[0] != "coordination.k8s.io" || r[0].Resources[0] != "leases" || strings.Join(r[0].Verbs, ",") != "get,create,update" {
		t.Errorf("rules %+v", r)
	}
	if binding.RoleRef.Name != role.Name || binding.Subjects[0].Name != sa.Name || binding.Subjects[0].Namespace != Namespace {
		t.Errorf("binding %+v", binding)
	}
}

func TestElectorNotReadyWaitsForPodsOnTheirNodesAndAHolder(t *testing.T) {
	ready := func(name, app, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	nodes := map[string]string{ElectorA: ElectorNodeA, ElectorB: ElectorNodeB}
	ctx := context.Background()
	cs := fake.NewClientset(ready("a", ElectorA, ElectorNodeA), ready("b", ElectorB, "worker3"))
	if why := electorNotReady(ctx, cs, nodes); !strings.Contains(why, "elector-b has no ready pod on worker2") {
		t.Errorf("b elsewhere: %q", why)
	}
	cs = fake.NewClientset(ready("a", ElectorA, ElectorNodeA), ready("b", ElectorB, ElectorNodeB))
	if why := electorNotReady(ctx, cs, nodes); !strings.Contains(why, "Lease faultline-split/elector") {
		t.Errorf("no Lease: %q", why)
	}
	holder := "b_1234"
	cs = fake.NewClientset(ready("a", ElectorA, ElectorNodeA), ready("b", ElectorB, ElectorNodeB),
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: Elector, Namespace: Namespace}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}})
	if why := electorNotReady(ctx, cs, nodes); why != "" {
		t.Errorf("all there: %q", why)
	}
}

func TestElectorReaderAsksOnlyWhenItsRunRunsIt(t *testing.T) {
	r := &electorReader{use: useOf([]string{"workload:ledger", "volume:shared"})}
	if qs := r.Questions(); len(qs) != 0 {
		t.Fatalf("elector not in the run, asked %v", qs)
	}
	r = &electorReader{use: useOf([]string{"workload:elector", LabelFencing + "none"})}
	if qs := r.Questions(); len(qs) != 1 || qs[0] != storeddata.ElectorHistory || r.Source() != "elector" {
		t.Fatalf("elector in the run, asked %v of %s", qs, r.Source())
	}
	kvs := storedKVs([]history.KV{{Key: ElectorHistoryPrefix + "x/writer", Value: "{}"}})
	if len(kvs) != 1 || kvs[0].Key != ElectorHistoryPrefix+"x/writer" || kvs[0].Value != "{}" {
		t.Errorf("stored keys %+v", kvs)
	}
}

func TestElectorIsAWorkloadAndAnExtra(t *testing.T) {
	if _, ok := InstallerOf(WorkloadElector); !ok {
		t.Error("no installer for the elector")
	}
	found := false
	for _, e := range Extras() {
		found = found || e.Name == string(ElectorSource)
	}
	if !found {
		t.Error("the elector's evidence is not among the Extras")
	}
	in, _ := InstallerOf(WorkloadElector)
	if err := in(context.Background(), nil, Install{Labels: []string{"workload:elector"}, Info: electorInfo, Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "fencing:") {
		t.Errorf("installing without a fencing label: %v", err)
	}
}
