package readers

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source/sourcetest"
)

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Each agent's endpoint is asked as a health checker on the node would: an
// answer gives its status and body, a refusal or a connection left
// unanswered is recorded in the value, and only a node not reached makes
// the read unreadable.
func TestAgentHealthRecordsEachEndpointsAnswer(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("OK\nmore"))
	}))
	defer healthy.Close()
	silent := sourcetest.Listen(t, "127.0.0.1")
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	closed := sourcetest.Listen(t, "127.0.0.1")
	closedPort := portOf(t, closed.Addr().String())
	closed.Close()

	endpoints := []AgentEndpoint{
		{Agent: "kube-proxy", Port: portOf(t, healthy.Listener.Addr().String()), Path: "/healthz"},
		{Agent: "kube-router", Port: portOf(t, silent.Addr().String()), Path: "/healthz"},
		{Agent: "down", Port: closedPort, Path: "/healthz"},
	}
	a := NewAgentHealth(sourcetest.ShellHost{}, endpoints, 300*time.Millisecond)
	if a.Source() != "agents/worker2" {
		t.Errorf("source %s", a.Source())
	}
	ans := a.Read(context.Background())[dataplane.AgentHealth]
	var v dataplane.AgentHealthValue
	if err := ans.Decode(&v); err != nil {
		t.Fatalf("%+v: %v", ans, err)
	}
	if got := v.Agents["kube-proxy"]; !got.Healthy() || got.Body != "OK" {
		t.Errorf("the answering endpoint: %+v", got)
	}
	if got := v.Agents["kube-router"]; got.Healthy() || got.Error != "connected, no answer within 300ms" {
		t.Errorf("the endpoint that accepts and never answers: %+v", got)
	}
	if got := v.Agents["down"]; got.Healthy() || !strings.Contains(got.Error, "connection refused") {
		t.Errorf("the refusing endpoint: %+v", got)
	}

	ans = NewAgentHealth(sourcetest.UnreachableWorker{}, endpoints, 300*time.Millisecond).Read(context.Background())[dataplane.AgentHealth]
	if ans.State != evidence.Unreadable || !strings.Contains(ans.Reason, "reaching worker2") {
		t.Errorf("a node not reached: %+v, want unreadable naming it", ans)
	}
}
