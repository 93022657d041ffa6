package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// client-go's lines, errors included, go to the run folder's file and not
// to the terminal.
func TestClientLogLinesGoToTheRunFolder(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = stderr }()

	path := filepath.Join(t.TempDir(), ClientLogName)
	if err := captureClientLogs(path); err != nil {
		t.Fatal(err)
	}
	klog.Warning("watch ended with error: for the file")
	klog.Error("failed to watch: for the file too")
	klog.Flush()
	w.Close()
	os.Stderr = stderr
	var term strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		term.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if term.Len() > 0 {
		t.Errorf("klog wrote to the terminal: %q", term.String())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"watch ended with error: for the file", "failed to watch: for the file too"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %q:\n%s", ClientLogName, want, got)
		}
	}
}

// Lines logged before the run folder exists are held, then written to its
// file ahead of the rest; a start that never gets a folder spills them.
func TestClientLogLinesHeldUntilTheFolderExists(t *testing.T) {
	if err := holdClientLogs(); err != nil {
		t.Fatal(err)
	}
	klog.Warning("while the lab is checked")
	klog.Flush()
	path := filepath.Join(t.TempDir(), ClientLogName)
	if err := captureClientLogs(path); err != nil {
		t.Fatal(err)
	}
	klog.Warning("in the run")
	klog.Flush()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	held, later := strings.Index(string(got), "while the lab is checked"), strings.Index(string(got), "in the run")
	if held < 0 || later < held {
		t.Errorf("%s holds the held line at %d and the later one at %d, want both in that order:\n%s", ClientLogName, held, later, got)
	}

	if err := holdClientLogs(); err != nil {
		t.Fatal(err)
	}
	klog.Warning("before a refusal")
	klog.Flush()
	var spilled strings.Builder
	spillClientLogs(&spilled)
	if !strings.Contains(spilled.String(), "before a refusal") {
		t.Errorf("spilled %q, want the held line", spilled.String())
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "before a refusal") {
		t.Errorf("a line held after the folder's file was left went to it")
	}
}
