// Package browser drives a headless Chromium over the DevTools protocol,
// for the report pages' browser test and their screenshots: load a page,
// collect the script errors and network requests it makes, evaluate an
// expression in it, and capture the whole page as a PNG.
//
// It speaks the protocol over golang.org/x/net/websocket, already in the
// module, rather than bringing in a DevTools client library.
package browser

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/websocket"
)

// Binary is the Chromium binary, $FAULTLINE_CHROMIUM or Debian's chromium.
func Binary() string {
	if b := os.Getenv("FAULTLINE_CHROMIUM"); b != "" {
		return b
	}
	return "chromium"
}

// Browser is one headless Chromium, run at the lowest priority.
type Browser struct {
	cmd     *exec.Cmd
	profile string
	ws      *websocket.Conn

	mu      sync.Mutex
	nextID  int
	pending map[int]chan reply
	events  chan event
	readErr error
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type event struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

var listening = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// Start starts Chromium headless under nice -n 19 with a profile of its
// own, and connects to it.
func Start(ctx context.Context) (*Browser, error) {
	bin, err := exec.LookPath(Binary())
	if err != nil {
		return nil, fmt.Errorf("finding Chromium (apt-get install chromium, or set FAULTLINE_CHROMIUM): %w", err)
	}
	profile, err := os.MkdirTemp("", "faultline-chromium-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("nice", "-n", "19", bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--remote-debugging-port=0", "--remote-allow-origins=*", "--user-data-dir="+profile, "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	b := &Browser{cmd: cmd, profile: profile, pending: map[int]chan reply{}, events: make(chan event, 1024)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var url string
	select {
	case url = <-found:
	case <-time.After(60 * time.Second):
		b.Close()
		return nil, errors.New("chromium did not open its DevTools port within 60s")
	case <-ctx.Done():
		b.Close()
		return nil, ctx.Err()
	}
	ws, err := websocket.Dial(url, "", "http://127.0.0.1/")
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("connecting to chromium at %s: %w", url, err)
	}
	ws.MaxPayloadBytes = 256 << 20
	b.ws = ws
	go b.read()
	return b, nil
}

func (b *Browser) read() {
	for {
		var msg struct {
			ID int `json:"id"`
			reply
			event
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			close(b.events)
			return
		}
		if msg.ID != 0 {
			b.mu.Lock()
			ch := b.pending[msg.ID]
			delete(b.pending, msg.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- msg.reply
			}
			continue
		}
		select {
		case b.events <- msg.event:
		default: // a page that floods events loses the oldest part of them
		}
	}
}

// call sends one command (to the page's session, when session is set)
// and decodes its result into out.
func (b *Browser) call(ctx context.Context, session, method string, params, out any) error {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: connection to chromium lost: %w", method, b.readErr)
	}
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	if err := websocket.JSON.Send(b.ws, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: connection to chromium lost", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Close ends Chromium and removes its profile.
func (b *Browser) Close() {
	if b.ws != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = b.call(ctx, "", "Browser.close", nil, nil)
		cancel()
		b.ws.Close()
	}
	if b.cmd.Process != nil {
		done := make(chan struct{})
		go func() { _ = b.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	os.RemoveAll(b.profile)
}

// Page is one loaded page, with what it did while loading.
type Page struct {
	b       *Browser
	session string
	// Errors are the script exceptions and error-level console and log
	// entries of the page.
	Errors []string
	// Requests are the URLs the page asked for, itself first.
	Requests []string
}

// Open loads url in a new tab of the given viewport width and waits for
// its load event.
func (b *Browser) Open(ctx context.Context, url string, width int) (*Page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: att.SessionID}
	for _, m := range []string{"Runtime.enable", "Log.enable", "Network.enable", "Page.enable"} {
		if err := b.call(ctx, p.session, m, nil, nil); err != nil {
			return nil, err
		}
	}
	if err := b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		return nil, err
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return nil, err
	}
	if nav.ErrorText != "" {
		return nil, fmt.Errorf("loading %s: %s", url, nav.ErrorText)
	}
	for {
		select {
		case e, ok := <-b.events:
			if !ok {
				return nil, fmt.Errorf("loading %s: connection to chromium lost", url)
			}
			if e.SessionID != p.session {
				continue
			}
			if p.note(e) {
				// Let errors raised by the load event's handlers arrive.
				p.drain(200 * time.Millisecond)
				return p, nil
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("loading %s: %w", url, ctx.Err())
		}
	}
}

// note records what one event says; it reports the load event.
func (p *Page) note(e event) bool {
	switch e.Method {
	case "Page.loadEventFired":
		return true
	case "Runtime.exceptionThrown":
		var v struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		_ = json.Unmarshal(e.Params, &v)
		p.Errors = append(p.Errors, strings.TrimSpace(v.ExceptionDetails.Text+" "+v.ExceptionDetails.Exception.Description))
	case "Runtime.consoleAPICalled":
		var v struct {
			Type string            `json:"type"`
			Args []json.RawMessage `json:"args"`
		}
		_ = json.Unmarshal(e.Params, &v)
		if v.Type == "error" || v.Type == "assert" {
			p.Errors = append(p.Errors, fmt.Sprintf("console.%s %s", v.Type, v.Args))
		}
	case "Log.entryAdded":
		var v struct {
			Entry struct {
				Level string `json:"level"`
				Text  string `json:"text"`
				URL   string `json:"url"`
			} `json:"entry"`
		}
		_ = json.Unmarshal(e.Params, &v)
		if v.Entry.Level == "error" {
			p.Errors = append(p.Errors, strings.TrimSpace(v.Entry.Text+" "+v.Entry.URL))
		}
	case "Network.requestWillBeSent":
		var v struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		_ = json.Unmarshal(e.Params, &v)
		p.Requests = append(p.Requests, v.Request.URL)
	}
	return false
}

func (p *Page) drain(d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case e, ok := <-p.b.events:
			if !ok {
				return
			}
			if e.SessionID == p.session {
				p.note(e)
			}
		case <-deadline:
			return
		}
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its
// value into out. The expression is the test's, run through the
// protocol: the page itself holds no script.
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluating %q: %s", expr, r.ExceptionDetails.Text)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// Screenshot captures the whole page, beyond the viewport, as a PNG; its
// top maxHeight CSS pixels only, when maxHeight is above zero.
func (p *Page) Screenshot(ctx context.Context, maxHeight float64) ([]byte, error) {
	var m struct {
		CSSContentSize struct {
			Width, Height float64
		} `json:"cssContentSize"`
	}
	if err := p.b.call(ctx, p.session, "Page.getLayoutMetrics", nil, &m); err != nil {
		return nil, err
	}
	var shot struct {
		Data string `json:"data"`
	}
	h := m.CSSContentSize.Height
	if maxHeight > 0 && h > maxHeight {
		h = maxHeight
	}
	clip := map[string]any{"x": 0, "y": 0, "width": m.CSSContentSize.Width, "height": h, "scale": 1}
	if err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true, "clip": clip}, &shot); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(shot.Data)
}
