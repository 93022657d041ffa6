package scenario

import (
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
}

// captureClientLogs sends klog's output, every severity, to path (appended:
// each Ginkgo process of a suite run writes to the one file) and none of it
// to stderr. Called again it moves the output to the new path.
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
	old := clientLog.file
	clientLog.file = f
	clientLog.mu.Unlock()
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
