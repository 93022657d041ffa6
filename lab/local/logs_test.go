package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportLogsOfALabNotUpSaysSo(t *testing.T) {
	l := unitLab(t, "pair")
	dest := filepath.Join(t.TempDir(), "logs")
	err := l.ExportLogs(context.Background(), dest)
	if err == nil || !strings.Contains(err.Error(), "no host has logs") {
		t.Errorf("ExportLogs of a lab that is not up: %v", err)
	}
	if err := l.ExportLogs(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "no destination") {
		t.Errorf("ExportLogs with no destination: %v", err)
	}
}

// The logs a lab's supervisor and kubelets wrote land in one folder per
// host, pod logs under pods/.
func TestExportLogsCopiesServiceAndPodLogs(t *testing.T) {
	l := unitLab(t, "pair")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(l.dirs.Logs(), "pair-worker", "kubelet.log"), "kubelet started\n")
	write(filepath.Join(l.dirs.PodLogs("pair-worker"), "default_web_uid1", "web", "0.log"), "serving\n")
	write(filepath.Join(l.dirs.Logs(), "pair-cp", "etcd.log"), "etcd started\n")
	dest := t.TempDir()
	stale := filepath.Join(dest, "pair-worker", "stale.log")
	write(stale, "from an earlier export\n")
	keep := filepath.Join(dest, "notes.txt")
	write(keep, "mine\n")
	if err := l.ExportLogs(context.Background(), dest); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		filepath.Join(dest, "pair-worker", "kubelet.log"):                              "kubelet started\n",
		filepath.Join(dest, "pair-worker", "pods", "default_web_uid1", "web", "0.log"): "serving\n",
		filepath.Join(dest, "pair-cp", "etcd.log"):                                     "etcd started\n",
		keep: "mine\n",
	} {
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s from an earlier export is still there: a host's folder is replaced", stale)
	}
}
