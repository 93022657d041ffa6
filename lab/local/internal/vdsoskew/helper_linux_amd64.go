package vdsoskew

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// The ptrace work runs in a helper process: this program started again
// from /proc/self/exe with helperEnv set, which the init below turns into
// the helper before main runs. The reason is wait(2): a ptrace stop of a
// process that is also the tracer's child is reported to every wait of
// the tracer's process, whatever its options, so a goroutine of the
// caller waiting for that child to exit (os/exec's Wait, which the lab's
// supervisor runs for every service it starts) would take the stop for
// an exit. The helper is the tracer and nobody's parent; the caller only
// waits for the helper.
const helperEnv = "FAULTLINE_VDSOSKEW_HELPER"

// helperName is the helper's argv[0], so that ps names it.
const helperName = "faultline-vdsoskew-helper"

func init() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	// ptrace requests must come from the thread that seized; package
	// initialisation already runs on the main thread, locked.
	runtime.LockOSThread()
	os.Exit(serve(os.Stdin, os.NewFile(3, "response")))
}

type request struct {
	Op     op            `json:"op"`
	PIDs   []int         `json:"pids"`
	Offset time.Duration `json:"offset"`
}

type wireResult struct {
	PID   int    `json:"pid"`
	Patch Patch  `json:"patch"`
	Kind  string `json:"kind,omitempty"`
	Err   string `json:"err,omitempty"`
}

// kinds names the sentinel errors across the process boundary.
var kinds = map[string]error{
	"unsupported": ErrUnsupported,
	"prologue":    ErrUnexpectedPrologue,
	"vdso":        ErrUnexpectedVDSO,
	"traced":      ErrTraced,
	"gone":        ErrGone,
	"not-allowed": ErrNotAllowed,
}

func kindOf(err error) string {
	for k, s := range kinds {
		if errors.Is(err, s) {
			return k
		}
	}
	return ""
}

// helperError is an error the helper reported: its text, and the
// sentinel it wrapped.
type helperError struct {
	msg  string
	kind error
}

func (e *helperError) Error() string { return e.msg }
func (e *helperError) Unwrap() error { return e.kind }

func serve(in io.Reader, out *os.File) int {
	var req request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "%s: reading the request: %v\n", helperName, err)
		return 2
	}
	var res []wireResult
	for _, pid := range req.PIDs {
		r := wireResult{PID: pid}
		var err error
		switch req.Op {
		case opShift:
			r.Patch, err = shiftOne(pid, req.Offset)
		case opRestore:
			err = restoreOne(pid)
		default:
			err = fmt.Errorf("unknown operation %q", req.Op)
		}
		if err != nil {
			r.Kind, r.Err = kindOf(err), err.Error()
		}
		res = append(res, r)
	}
	if err := json.NewEncoder(out).Encode(res); err != nil {
		fmt.Fprintf(os.Stderr, "%s: writing the response: %v\n", helperName, err)
		return 2
	}
	return 0
}

// helperTimeout bounds one helper: every thread gets stopTimeout to stop.
func helperTimeout(pids int) time.Duration { return time.Minute + time.Duration(pids)*10*time.Second }

func run(o op, pids []int, offset time.Duration) []Result {
	if os.Geteuid() != 0 {
		return each(pids, fmt.Errorf("%w: ptrace and /proc/<pid>/mem of other processes need root", ErrUnsupported))
	}
	out := make([]Result, len(pids))
	var ask []int
	for i, pid := range pids {
		out[i].PID = pid
		if pid == os.Getpid() {
			out[i].Err = fmt.Errorf("pid %d: %w: it is the program asking", pid, ErrNotAllowed)
			continue
		}
		ask = append(ask, pid)
	}
	if len(ask) == 0 {
		return out
	}
	got, err := callHelper(request{Op: o, PIDs: ask, Offset: offset})
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		r, ok := got[out[i].PID]
		switch {
		case ok && r.Err != "":
			out[i].Err = &helperError{msg: r.Err, kind: kinds[r.Kind]}
		case ok:
			out[i].Patch = r.Patch
		case err != nil:
			out[i].Err = err
		default:
			out[i].Err = fmt.Errorf("pid %d: the helper said nothing of it", out[i].PID)
		}
	}
	return out
}

func callHelper(req request) (map[int]wireResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout(len(req.PIDs)))
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{helperName}
	cmd.Env = []string{helperEnv + "=1"}
	cmd.Stdin = bytes.NewReader(body)
	cmd.ExtraFiles = []*os.File{w}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the vDSO skew helper: %w", err)
	}
	w.Close()
	resp, rerr := io.ReadAll(r)
	werr := cmd.Wait()
	var res []wireResult
	jerr := json.Unmarshal(resp, &res)
	out := map[int]wireResult{}
	for _, x := range res {
		out[x.PID] = x
	}
	if werr != nil || rerr != nil || jerr != nil {
		return out, fmt.Errorf("the vDSO skew helper failed: %v (%v %v): %s", werr, rerr, jerr, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
