// Command clockprobe is the process the vdsoskew tests shift. It answers
// one JSON line per command line read on stdin, and serves HTTP on
// loopback (its address is the first line it prints), so a test reads its
// wall clock the ways the lab's components show theirs.
//
//	now      time.Now and time.Since(start), on the thread that reads them
//	thread   the same, read on a thread started for it
//	vdso     gettimeofday, time and clock_gettime called in the vDSO directly
//	spin N   N goroutines calling the clocks in a loop until exit
//	spinner  one goroutine on its own thread calling time.Now in a loop; its tid
//	count    how many readings the spinning goroutines have made
package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

func call2(fn, a0, a1 uintptr) uintptr

var start = time.Now()

type reading struct {
	UnixNS  int64 `json:"unixNS"`
	SinceNS int64 `json:"sinceNS"`
	TID     int   `json:"tid"`
}

func read() reading {
	now := time.Now()
	return reading{UnixNS: now.UnixNano(), SinceNS: int64(now.Sub(start)), TID: syscall.Gettid()}
}

type vdsoReading struct {
	GettimeofdayUS int64 `json:"gettimeofdayUS"`
	TimeS          int64 `json:"timeS"`
	TimeStoredS    int64 `json:"timeStoredS"`
	CoarseNS       int64 `json:"coarseNS"`
	MonotonicNS    int64 `json:"monotonicNS"`
	UnixNS         int64 `json:"unixNS"`
}

// vdso is the address of each function the probe calls directly.
var vdso = map[string]uintptr{}

func findVDSO() error {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(maps), "\n") {
		if !strings.HasSuffix(line, "[vdso]") {
			continue
		}
		lo, hi, _ := strings.Cut(strings.Fields(line)[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			return err
		}
		img := make([]byte, b-a)
		_, err = mem.ReadAt(img, int64(a))
		mem.Close()
		if err != nil {
			return err
		}
		f, err := elf.NewFile(bytes.NewReader(img))
		if err != nil {
			return err
		}
		syms, err := f.DynamicSymbols()
		if err != nil {
			return err
		}
		for _, s := range syms {
			vdso[s.Name] = uintptr(a + s.Value)
		}
		return nil
	}
	return fmt.Errorf("no [vdso]")
}

func readVDSO() vdsoReading {
	var tv [2]int64
	var ts [2]int64
	var stored int64
	var r vdsoReading
	call2(vdso["__vdso_gettimeofday"], uintptr(unsafe.Pointer(&tv)), 0)
	r.GettimeofdayUS = tv[0]*1e6 + tv[1]
	r.TimeS = int64(call2(vdso["__vdso_time"], uintptr(unsafe.Pointer(&stored)), 0))
	r.TimeStoredS = stored
	call2(vdso["__vdso_clock_gettime"], 5, uintptr(unsafe.Pointer(&ts)))
	r.CoarseNS = ts[0]*1e9 + ts[1]
	call2(vdso["__vdso_clock_gettime"], 1, uintptr(unsafe.Pointer(&ts)))
	r.MonotonicNS = ts[0]*1e9 + ts[1]
	r.UnixNS = time.Now().UnixNano()
	runtime.KeepAlive(&tv)
	runtime.KeepAlive(&ts)
	runtime.KeepAlive(&stored)
	return r
}

var calls atomic.Int64

func spin(withVDSO bool) {
	for i := 0; ; i++ {
		_ = time.Now()
		if withVDSO && i%64 == 0 {
			_ = readVDSO()
		}
		calls.Add(1)
	}
}

func main() {
	if err := findVDSO(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	out := json.NewEncoder(os.Stdout)
	out.Encode(map[string]string{"addr": ln.Addr().String()})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd := strings.Fields(sc.Text())
		if len(cmd) == 0 {
			continue
		}
		switch cmd[0] {
		case "now":
			out.Encode(read())
		case "thread":
			got := make(chan reading)
			go func() {
				// Exiting while locked ends the thread, so the next
				// request needs a thread the runtime has to start.
				runtime.LockOSThread()
				got <- read()
			}()
			out.Encode(<-got)
		case "vdso":
			out.Encode(readVDSO())
		case "spin":
			n, _ := strconv.Atoi(cmd[1])
			for range n {
				go spin(true)
			}
			out.Encode(map[string]int{"spinning": n})
		case "spinner":
			tid := make(chan int)
			go func() {
				runtime.LockOSThread()
				tid <- syscall.Gettid()
				spin(false)
			}()
			out.Encode(map[string]int{"tid": <-tid})
		case "count":
			out.Encode(map[string]int64{"calls": calls.Load()})
		default:
			out.Encode(map[string]string{"error": "unknown command " + cmd[0]})
		}
	}
}
