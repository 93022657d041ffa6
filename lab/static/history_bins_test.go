//go:build bins

package static

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/faultline/faultline/internal/kubetest"
	"github.com/faultline/faultline/lab"
)

// A store faultline runs is started on its host when it does not answer,
// found running the next time, and emptied of every key.
func TestHistoryStoreIsStartedOnceAndEmptied(t *testing.T) {
	etcd := kubetest.Binary(t, kubetest.Etcd, "etcd")
	dir := t.TempDir()
	port := kubetest.FreePortPair(t)
	cfg := &lab.Config{Name: "fleet", Kind: Kind, Hosts: []lab.HostConfig{{Name: "store", Roles: []lab.Role{lab.RoleStorage}, Address: "127.0.0.1"}},
		Storage: &lab.StorageSettings{SharedClass: "nfs", History: lab.HistoryStore{Host: "store", Etcd: etcd, DataDir: filepath.Join(dir, "history"), Port: port}}}
	l := New(cfg, Options{})
	var ran []string
	l.testHosts = []lab.Host{shellNode{name: "store", roles: []lab.Role{lab.RoleStorage}, mounts: &mountTable{path: "/dev/null"}, ran: &ran}}
	pidFile := filepath.Join(dir, "history", "etcd.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if got, want := l.historyEndpoints(), "http://127.0.0.1:"+strconv.Itoa(port); len(got) != 1 || got[0] != want {
		t.Fatalf("endpoints %v, want [%s]", got, want)
	}
	c, err := l.historyClient(ctx)
	if err != nil {
		t.Fatalf("starting the store: %v", err)
	}
	defer c.Close()
	if len(ran) != 1 || !strings.Contains(ran[0], "setsid "+shellQuote(etcd)) {
		t.Fatalf("commands %q, want one start of %s", ran, etcd)
	}
	for _, k := range []string{"/faultline/splitbrain/ledger/a", "/faultline/splitbrain/elector/b", "other"} {
		if _, err := c.Put(ctx, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.emptyHistory(ctx); err != nil {
		t.Fatalf("emptying: %v", err)
	}
	resp, err := c.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Fatalf("after emptying: %d keys, %v", resp.Count, err)
	}
	if len(ran) != 1 {
		t.Errorf("commands %q: the running store was started again", ran)
	}
}
