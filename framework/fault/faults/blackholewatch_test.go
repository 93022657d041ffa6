package faults

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/lab"
)

const nodeRBACConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
  - type: Node
    name: node
  - type: RBAC
    name: rbac
`

func TestRenderPutsTheDenyingWebhookFirstAndKeepsTheRest(t *testing.T) {
	out, err := renderDenyWatchConfig([]byte(nodeRBACConfig), "faultline-blackhole-watch-abcd", lab.Identity{User: "system:node:worker1"}, []WatchedResource{{Resource: "pods"}}, "/etc/k/refused.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	var got, orig map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatalf("rendered config is not YAML: %v\n%s", err, out)
	}
	if err := yaml.Unmarshal([]byte(nodeRBACConfig), &orig); err != nil {
		t.Fatal(err)
	}
	if got["apiVersion"] != orig["apiVersion"] || got["kind"] != orig["kind"] {
		t.Errorf("header changed: %v %v", got["apiVersion"], got["kind"])
	}
	list := got["authorizers"].([]any)
	if len(list) != 3 {
		t.Fatalf("%d authorizers, want 3:\n%s", len(list), out)
	}
	if !reflect.DeepEqual(list[1:], orig["authorizers"]) {
		t.Errorf("the original authorizers changed: %v", list[1:])
	}
	first := list[0].(map[string]any)
	if first["type"] != "Webhook" || first["name"] != "faultline-blackhole-watch-abcd" {
		t.Errorf("first authorizer is %v %v", first["type"], first["name"])
	}
	wh := first["webhook"].(map[string]any)
	for field, want := range map[string]any{
		"failurePolicy":                            "Deny",
		"cacheAuthorizedRequests":                  false,
		"cacheUnauthorizedRequests":                false,
		"subjectAccessReviewVersion":               "v1",
		"matchConditionSubjectAccessReviewVersion": "v1",
	} {
		if wh[field] != want {
			t.Errorf("webhook.%s = %v, want %v", field, wh[field], want)
		}
	}
	ci := wh["connectionInfo"].(map[string]any)
	if ci["type"] != "KubeConfigFile" || ci["kubeConfigFile"] != "/etc/k/refused.kubeconfig" {
		t.Errorf("connectionInfo = %v", ci)
	}
	conds := wh["matchConditions"].([]any)
	if len(conds) != 1 {
		t.Fatalf("%d match conditions, want 1", len(conds))
	}
	expr := conds[0].(map[string]any)["expression"].(string)
	for _, want := range []string{"request.user == 'system:node:worker1'", "request.resourceAttributes.resource == 'pods'", "request.resourceAttributes.verb in ['list', 'watch']", "!has(request.resourceAttributes.subresource)"} {
		if !strings.Contains(expr, want) {
			t.Errorf("match condition %q lacks %q", expr, want)
		}
	}
	// Every field read is guarded: an unguarded read of an absent field is
	// an evaluation error, which failurePolicy Deny turns into a denial.
	for _, field := range []string{"request.user", "request.resourceAttributes.resource", "request.resourceAttributes.verb"} {
		if !strings.Contains(expr, "has("+field+")") {
			t.Errorf("match condition reads %s without has(): %q", field, expr)
		}
	}
}

func TestRenderRefusesWhatItCannotChangeSafely(t *testing.T) {
	cases := []struct{ config, want string }{
		{"", "empty"},
		{"apiVersion: v1\nkind: Config\n", "not a AuthorizationConfiguration"},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers: []\n", "no authorizers"},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n", "no authorizers"},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n  - type: Webhook\n    name: faultline-blackhole-watch-abcd\n", "already named"},
		{"{not yaml", "reading"},
	}
	for _, c := range cases {
		_, err := renderDenyWatchConfig([]byte(c.config), "faultline-blackhole-watch-abcd", lab.Identity{User: "system:node:worker1"}, []WatchedResource{{Resource: "pods"}}, "/k")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("render(%q) = %v, want an error containing %q", c.config, err, c.want)
		}
	}
}

func TestParseLastConfigHash(t *testing.T) {
	metrics := `# HELP apiserver_authorization_config_controller_last_config_info [ALPHA] Information about the last applied authorization configuration
# TYPE apiserver_authorization_config_controller_last_config_info gauge
apiserver_authorization_config_controller_last_config_info{apiserver_id_hash="sha256:1f",hash="sha256:beef"} 1
apiserver_authorization_config_controller_automatic_reloads_total{apiserver_id_hash="sha256:1f",status="success"} 2
`
	got, err := parseLastConfigHash(metrics)
	if err != nil || got != "sha256:beef" {
		t.Errorf("parseLastConfigHash = %q, %v", got, err)
	}
	if _, err := parseLastConfigHash("apiserver_request_total 5\n"); err == nil || !strings.Contains(err.Error(), "--authorization-config") {
		t.Errorf("no config info: err = %v", err)
	}
	if got := configHash([]byte("abc")); got != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("configHash = %s", got)
	}
}

func TestBlackholeWatchNeedsToKnowWhereTheConfigIs(t *testing.T) {
	l := loadLab(t, "lab11")
	err := BlackholeWatch("worker1").Inject(context.Background(), l)
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "lab.AuthorizationConfigFiles") {
		t.Errorf("Inject on a lab that does not say = %v, want unsupported naming the interface", err)
	}
	if ch := l.changes(); len(ch) > 0 {
		t.Errorf("changed the lab: %q", ch)
	}
	if err := BlackholeWatch("worker1").Heal(context.Background(), l); err != nil {
		t.Errorf("Heal on a lab where inject cannot have changed anything = %v", err)
	}
	if ch := l.changes(); len(ch) > 0 {
		t.Errorf("heal changed the lab: %q", ch)
	}
}

func TestBlackholeWatchChecksEveryServerBeforeChangingAny(t *testing.T) {
	const conf = "/etc/kubernetes/authz.yaml"
	read := "if [ -e '" + conf + ".faultline-"
	cases := []struct {
		name   string
		answer func(l *recordingLab)
		want   string
	}{
		{"an API server down", func(l *recordingLab) { l.host("cp3").setState(lab.ServiceAPIServer, "stopped", 0) }, "cp3: its API server is stopped"},
		{"a config that is no authorization configuration", func(l *recordingLab) {
			l.host("cp2").answers[read] = lab.Result{Stdout: base64.StdEncoding.EncodeToString([]byte("kind: Config\n"))}
		}, "cp2: " + conf},
		{"a fault not healed", func(l *recordingLab) {
			l.host("cp3").answers[read] = lab.Result{Stdout: "present\n" + base64.StdEncoding.EncodeToString([]byte(nodeRBACConfig))}
		}, "injected and not healed"},
		{"something on the refused port", func(l *recordingLab) {
			l.host("cp2").answers["ss -Hltn"] = lab.Result{Stdout: "LISTEN 0 4096 127.0.0.1:1 0.0.0.0:*\n"}
		}, "listens on port 1"},
	}
	for _, c := range cases {
		l := loadLab(t, "lab11")
		for _, h := range l.hosts {
			h.answers[read] = lab.Result{Stdout: base64.StdEncoding.EncodeToString([]byte(nodeRBACConfig))}
		}
		c.answer(l)
		err := BlackholeWatchAt("worker1", conf).Inject(context.Background(), l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Inject = %v, want an error containing %q", c.name, err, c.want)
		}
		for _, ch := range l.changes() {
			if !strings.HasPrefix(strings.SplitN(ch, ": ", 2)[1], read) && !strings.Contains(ch, "ss -Hltn") {
				t.Errorf("%s: changed the lab before failing: %q", c.name, ch)
			}
		}
	}
}

// The install and heal scripts run here for real, on files in a temporary
// directory, with the shell and tools a host has.
func TestInstallAndHealScriptsRestoreTheFileByteForByte(t *testing.T) {
	for _, tool := range []string{"bash", "base64", "sha256sum", "cp", "mv", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "authorization-config.yaml")
	// No trailing newline and a comment: the heal must give back these
	// bytes, not an equivalent YAML.
	original := []byte("# kept as written\n" + strings.TrimSuffix(nodeRBACConfig, "\n"))
	if err := os.WriteFile(conf, original, 0o640); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)
	f := BlackholeWatchAt("worker1", conf).(*blackholeWatch)
	s := apiServerHost{config: conf, original: conf + ".faultline-" + f.p.Tag + ".orig", kubeconfig: filepath.Join(dir, "faultline-"+f.p.Tag+"-refused-webhook.kubeconfig")}
	rendered, err := renderDenyWatchConfig(original, f.authorizerName(), lab.Identity{User: "system:node:worker1"}, []WatchedResource{{Resource: "pods"}}, s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	bash := func(script string) (string, error) {
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		return string(out), err
	}
	if out, err := bash(installAuthzScript(s, rendered)); err != nil {
		t.Fatalf("install: %v: %s", err, out)
	}
	if got, _ := os.ReadFile(conf); !bytes.Equal(got, rendered) {
		t.Errorf("installed config is not the rendered one:\n%s", got)
	}
	if st, _ := os.Stat(conf); st.Mode().Perm() != 0o640 {
		t.Errorf("installed config has mode %v, want the original's 0640", st.Mode().Perm())
	}
	if kc, _ := os.ReadFile(s.kubeconfig); !strings.Contains(string(kc), "server: https://127.0.0.1:1\n") {
		t.Errorf("webhook kubeconfig: %s", kc)
	}
	if out, err := bash(installAuthzScript(s, rendered)); err == nil {
		t.Errorf("a second install over the first succeeded: %s", out)
	}
	out, err := bash(healAuthzScript(s, f.authorizerName()))
	if err != nil {
		t.Fatalf("heal: %v: %s", err, out)
	}
	if got, _ := os.ReadFile(conf); !bytes.Equal(got, original) {
		t.Errorf("healed config differs from the original:\n%q\nwant\n%q", got, original)
	}
	found, removed, rest := splitHealOutput(out)
	if want := configHash(original); len(strings.Fields(rest)) == 0 || "sha256:"+strings.Fields(rest)[0] != want {
		t.Errorf("heal printed %q, want the hash %s", out, want)
	}
	wantFound := []string{"the original authorization configuration kept as " + s.original, s.kubeconfig}
	wantRemoved := []string{conf + ", the original moved back over it", s.kubeconfig}
	if !reflect.DeepEqual(found, wantFound) || !reflect.DeepEqual(removed, wantRemoved) {
		t.Errorf("heal found %q and removed %q, want %q and %q", found, removed, wantFound, wantRemoved)
	}
	if after := listDir(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("directory after heal %v, before %v", after, before)
	}
	if out, err := bash(healAuthzScript(s, f.authorizerName())); err != nil {
		t.Errorf("a second heal failed: %v: %s", err, out)
	} else if found, removed, _ := splitHealOutput(out); len(found)+len(removed) > 0 {
		t.Errorf("a second heal found %q and removed %q, want nothing", found, removed)
	}
	if got, _ := os.ReadFile(conf); !bytes.Equal(got, original) {
		t.Errorf("a second heal changed the config")
	}

	// The original lost while the fault's authorizer is still in the file:
	// heal cannot restore it and must say so.
	if err := os.WriteFile(conf, rendered, 0o640); err != nil {
		t.Fatal(err)
	}
	if out, err := bash(healAuthzScript(s, f.authorizerName())); err == nil || !strings.Contains(out, "the original") {
		t.Errorf("heal without the original = %v: %s", err, out)
	}
}

func listDir(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]os.FileMode{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = info.Mode()
	}
	return out
}

// The agent's blackhole selects that user's list and watch of the named
// resources, each in its group, and refuses bad names before anything.
func TestBlackholeAgentWatchSelectsTheAgentsResources(t *testing.T) {
	expr := denyWatchExpression(lab.Identity{User: "faultline:kube-router:worker1"}, []WatchedResource{{Group: "networking.k8s.io", Resource: "networkpolicies"}, {Resource: "pods"}})
	for _, want := range []string{
		"request.user == 'faultline:kube-router:worker1'",
		"(request.resourceAttributes.resource == 'networkpolicies' && (has(request.resourceAttributes.group) && request.resourceAttributes.group == 'networking.k8s.io'))",
		"(request.resourceAttributes.resource == 'pods' && (!has(request.resourceAttributes.group) || request.resourceAttributes.group == ''))",
		"request.resourceAttributes.verb in ['list', 'watch']",
	} {
		if !strings.Contains(expr, want) {
			t.Errorf("expression lacks %q:\n%s", want, expr)
		}
	}
	for _, p := range []blackholeWatchParams{
		{Node: "worker1", Agent: "kube-router", Tag: "abcd"},
		{Node: "worker1", Resources: []WatchedResource{{Resource: "pods"}}, Tag: "abcd"},
		{Node: "worker1", Agent: "kube-router", Resources: []WatchedResource{{Resource: "pods' || true || '"}}, Tag: "abcd"},
		{ServiceAccount: "kube-system/coredns", PodSelector: "k8s-app=kube-dns", Tag: "abcd"},
		{ServiceAccount: "coredns", PodSelector: "k8s-app=kube-dns", Resources: []WatchedResource{{Resource: "services"}}, Tag: "abcd"},
		{ServiceAccount: "kube-system/coredns", PodSelector: "k8s-app in (x)", Resources: []WatchedResource{{Resource: "services"}}, Tag: "abcd"},
		{ServiceAccount: "kube-system/coredns", Node: "worker1", PodSelector: "k8s-app=kube-dns", Resources: []WatchedResource{{Resource: "services"}}, Tag: "abcd"},
	} {
		if err := p.check(); err == nil {
			t.Errorf("params %+v accepted", p)
		}
	}
	for _, ok := range []blackholeWatchParams{
		{Node: "worker1", Agent: "kube-router", Resources: []WatchedResource{{Group: "networking.k8s.io", Resource: "networkpolicies"}}, Tag: "abcd"},
		{ServiceAccount: "kube-system/coredns", PodSelector: "k8s-app=kube-dns", Resources: []WatchedResource{{Resource: "services"}}, Tag: "abcd"},
	} {
		if err := ok.check(); err != nil {
			t.Errorf("params %+v: %v", ok, err)
		}
	}
}
