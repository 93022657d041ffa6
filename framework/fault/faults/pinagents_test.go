package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The pin script runs in a real shell on a kubeconfig of the lab's form:
// only the server lines change, the original is kept, and a second inject
// over a kept original is refused and changes nothing.
func TestPinScriptRewritesTheServerAndKeepsTheOriginal(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kube-proxy.kubeconfig")
	orig := "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority: /pki/ca.crt\n    server: https://10.240.0.100:6443\n  name: lab11\nkind: Config\n"
	if err := os.WriteFile(kc, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	a := pinned{agent: "kube-proxy", config: kc, original: kc + ".faultline-ab12.orig"}
	url := "https://10.240.0.12:6443"
	if out, err := exec.Command("bash", "-c", pinScript(a, url)).CombinedOutput(); err != nil {
		t.Fatalf("pin: %v: %s", err, out)
	}
	got, _ := os.ReadFile(kc)
	if want := strings.Replace(orig, "https://10.240.0.100:6443", url, 1); string(got) != want {
		t.Errorf("pinned kubeconfig:\n%s\nwant:\n%s", got, want)
	}
	if kept, _ := os.ReadFile(a.original); string(kept) != orig {
		t.Errorf("kept original %q", kept)
	}
	if st, err := os.Stat(kc); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode after pin: %v %v", st.Mode(), err)
	}
	if out, err := exec.Command("bash", "-c", pinScript(a, "https://10.240.0.13:6443")).CombinedOutput(); err == nil {
		t.Errorf("a second pin over a kept original succeeded: %s", out)
	}
	if again, _ := os.ReadFile(kc); string(again) != string(got) {
		t.Errorf("the refused pin changed the kubeconfig: %s", again)
	}
	if kept, _ := os.ReadFile(a.original); string(kept) != orig {
		t.Errorf("the refused pin changed the kept original: %q", kept)
	}
}
