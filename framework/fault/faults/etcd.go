package faults

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/faultline/faultline/lab"
)

// etcdClient connects to the lab's etcd cluster through lab.EtcdAccess.
func etcdClient(l lab.Lab, what string) (*clientv3.Client, error) {
	acc, ok := l.(lab.EtcdAccess)
	if !ok {
		return nil, lab.Unsupported(l.Info().Kind, what, "the lab gives no etcd client access (lab.EtcdAccess)")
	}
	endpoints, tlsConfig, err := acc.EtcdClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: getting the lab's etcd client config: %w", what, err)
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%s: the lab lists no etcd endpoints", what)
	}
	return newEtcdClient(what, endpoints, tlsConfig)
}

// newEtcdClient is an etcd client of endpoints with the lab's TLS config
// and faultline's dial timeout, logging nothing.
func newEtcdClient(what string, endpoints []string, tlsConfig *tls.Config, opts ...grpc.DialOption) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsConfig,
		DialTimeout: 5 * time.Second,
		DialOptions: opts,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: connecting to etcd %v: %w", what, endpoints, err)
	}
	return c, nil
}

// etcdLeaderHost asks every endpoint for its view of the leader and
// returns the lab host whose address the leader member's URLs carry.
func etcdLeaderHost(ctx context.Context, l lab.Lab) (lab.Host, error) {
	c, err := etcdClient(l, "finding the etcd leader")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	leader, err := etcdLeaderID(ctx, c)
	if err != nil {
		return nil, err
	}
	members, err := c.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("finding the etcd leader: listing members: %w", err)
	}
	for _, m := range members.Members {
		if m.ID != leader {
			continue
		}
		h, err := hostOfURLs(l, append(append([]string{}, m.ClientURLs...), m.PeerURLs...))
		if err != nil {
			return nil, fmt.Errorf("finding the etcd leader (member %s %x): %w", m.Name, m.ID, err)
		}
		return h, nil
	}
	return nil, fmt.Errorf("finding the etcd leader: leader %x is not in the member list", leader)
}

func etcdLeaderID(ctx context.Context, c *clientv3.Client) (uint64, error) {
	var lastErr error
	for _, ep := range c.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := c.Status(sctx, ep)
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		if st.Leader != 0 {
			return st.Leader, nil
		}
	}
	return 0, fmt.Errorf("finding the etcd leader: no endpoint reports one (last error: %v)", lastErr)
}

// hostOfURLs returns the lab host whose management address one of urls
// points at.
func hostOfURLs(l lab.Lab, urls []string) (lab.Host, error) {
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			continue
		}
		host := p.Hostname()
		if host == "" {
			host, _, _ = net.SplitHostPort(p.Host)
		}
		for _, h := range l.Hosts() {
			if h.Address() == host {
				return h, nil
			}
		}
	}
	return nil, fmt.Errorf("none of %v is a lab host's address", urls)
}
