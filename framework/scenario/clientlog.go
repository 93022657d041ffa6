package scenario

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// ClientLogName is the file in the run folder that client-go's own log
// lines (klog: reflector warnings such as "watch ended with error", request
// errors) go to, so that the terminal shows the engine's lines only.
const ClientLogName = "client-go.log"

// LabLogName is the file in the run folder that the lab's own steps (a
// reset's stop, restore and boot, each with its elapsed time) go to, for a
// lab that reports them (lab.ProgressReporter).
const LabLogName = "lab.log"

var clientLog struct {
	mu   sync.Mutex
	file *os.File
	// held are the lines logged before there was a run folder to put them
	// in: opening and checking the lab and healing the ledger are a
	// client's work too, and come before the folder is made.
	held *heldLines
}

// heldLines is klog's output kept in memory until the run folder exists.
type heldLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (h *heldLines) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.Write(p)
}

func (h *heldLines) take() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := append([]byte(nil), h.buf.Bytes()...)
	h.buf.Reset()
	return b
}

// holdClientLogs keeps klog's output in memory, none of it on stderr,
// until captureClientLogs names the run folder's file (which gets it) or
// spillClientLogs gives up on one.
func holdClientLogs() error {
	h := &heldLines{}
	if err := quietKlog(h); err != nil {
		return err
	}
	clientLog.mu.Lock()
	clientLog.held = h
	clientLog.mu.Unlock()
	return nil
}

// spillClientLogs writes the lines held so far to w, for a suite that
// stops before it has a run folder: the terminal is then the only place
// they can go, and they may say why it stopped.
func spillClientLogs(w io.Writer) {
	clientLog.mu.Lock()
	h := clientLog.held
	clientLog.held = nil
	clientLog.mu.Unlock()
	if h == nil {
		return
	}
	if b := h.take(); len(b) > 0 {
		fmt.Fprintf(w, "client-go's log lines so far:\n%s", b)
	}
}

// captureClientLogs sends klog's output, every severity, to path (appended:
// each Ginkgo process of a suite run writes to the one file) and none of it
// to stderr, after the lines held until now. Called again it moves the
// output to the new path.
func captureClientLogs(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("client-go's log file: %w", err)
	}
	if err := quietKlog(f); err != nil {
		f.Close()
		return err
	}
	clientLog.mu.Lock()
	old, h := clientLog.file, clientLog.held
	clientLog.file, clientLog.held = f, nil
	clientLog.mu.Unlock()
	if h != nil {
		if _, err := f.Write(h.take()); err != nil {
			return fmt.Errorf("client-go's log file: %w", err)
		}
	}
	if old != nil {
		old.Close()
	}
	return nil
}

// quietKlog points klog at w alone. klog writes to stderr unless told
// otherwise, and with logtostderr off it still copies lines at or above
// stderrthreshold there; both are turned off.
func quietKlog(w io.Writer) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"stderrthreshold": "FATAL",
		"one_output":      "true",
	} {
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("klog flag %s: %w", name, err)
		}
	}
	klog.SetOutput(w)
	return nil
}
