package static

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The external store the workloads keep their histories in: one that
// runs already (storage.history.endpoints), or one faultline runs itself
// on the storage host the file names (storage.history.host), started
// over SSH when it does not answer and left running. Every reset empties
// it: a history left from an earlier run would name writes this run's
// data never held.

// historyDialTimeout bounds a connection to the store, and historyStart
// the wait for a store faultline started to answer (etcd's own start on
// an empty data dir takes about a second).
const (
	historyDialTimeout = 3 * time.Second
	historyStart       = 30 * time.Second
)

// historyEndpoints are the store's client URLs: the file's, or the one
// faultline runs on the storage host's address.
func (l *Lab) historyEndpoints() []string {
	s := l.cfg.Storage
	if s == nil {
		return nil
	}
	if s.History.Host == "" {
		return append([]string(nil), s.History.Endpoints...)
	}
	hc, _ := l.cfg.HostConfig(s.History.Host)
	return []string{"http://" + net.JoinHostPort(hc.Address, strconv.Itoa(s.History.Port))}
}

// historyStartScript starts etcd on the storage host as a one-member
// cluster of its own, detached from the SSH session, its client port on
// the host's address and its peer port on loopback; its pid goes to
// <dataDir>/etcd.pid (stop it with kill "$(cat <dataDir>/etcd.pid)").
func historyStartScript(etcd, dataDir, address string, port int) string {
	client := "http://" + net.JoinHostPort(address, strconv.Itoa(port))
	peer := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1))
	d := shellQuote(dataDir)
	return fmt.Sprintf(`mkdir -p %s || exit 1; cd / || exit 1; `+
		`setsid %s --name faultline-history --data-dir %s `+
		`--listen-client-urls %s --advertise-client-urls %s `+
		`--listen-peer-urls %s --initial-advertise-peer-urls %s --initial-cluster faultline-history=%s `+
		`>%s 2>&1 </dev/null & echo $! >%s`,
		d, shellQuote(etcd), shellQuote(path.Join(dataDir, "data")),
		client, client, peer, peer, peer,
		shellQuote(path.Join(dataDir, "etcd.log")), shellQuote(path.Join(dataDir, "etcd.pid")))
}

// historyClient connects to the store; a store faultline runs that does
// not answer is started first.
func (l *Lab) historyClient(ctx context.Context) (*clientv3.Client, error) {
	s := l.cfg.Storage
	endpoints := l.historyEndpoints()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: historyDialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("the history store at %v: %w", endpoints, err)
	}
	if answers(ctx, c, endpoints) == nil || s.History.Host == "" {
		return c, nil
	}
	h, err := l.nodeHost(s.History.Host)
	if err != nil {
		c.Close()
		return nil, err
	}
	res, err := h.Run(ctx, historyStartScript(s.History.Etcd, s.History.DataDir, h.Address(), s.History.Port))
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit status %d: %s", res.ExitCode, res.Stderr)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("starting the history store on %s: %w", h.Name(), err)
	}
	deadline := time.Now().Add(historyStart)
	for {
		err := answers(ctx, c, endpoints)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.Close()
			return nil, fmt.Errorf("the history store started on %s does not answer after %s (its log: %s): %w",
				h.Name(), historyStart, path.Join(s.History.DataDir, "etcd.log"), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// answers asks every endpoint for its status.
func answers(ctx context.Context, c *clientv3.Client, endpoints []string) error {
	var errs []error
	for _, e := range endpoints {
		sctx, cancel := context.WithTimeout(ctx, historyDialTimeout)
		_, err := c.Status(sctx, e)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e, err))
		}
	}
	return errors.Join(errs...)
}

// emptyHistory deletes every key of the store and checks none is left.
func (l *Lab) emptyHistory(ctx context.Context) error {
	c, err := l.historyClient(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Delete(ctx, "\x00", clientv3.WithFromKey()); err != nil {
		return fmt.Errorf("emptying the history store: %w", err)
	}
	resp, err := c.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("checking the history store is empty: %w", err)
	}
	if resp.Count != 0 {
		return fmt.Errorf("the history store still holds %d keys after it was emptied", resp.Count)
	}
	return nil
}
