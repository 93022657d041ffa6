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
