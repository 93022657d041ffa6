package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindAPIServerEtcdFork is the kind of APIServerEtcdFork faults.
const KindAPIServerEtcdFork = "apiserver-etcd-fork"

// ClassSplitBrain is a fault after which parts of the control plane work
// from different copies of the cluster's state.
const ClassSplitBrain fault.Class = "split-brain"

// DefaultEtcdForkPort is the client port of the fork on its host; its peer
// port, on the host's loopback, is the next one.
const DefaultEtcdForkPort = 23790

// etcdForkWait bounds each wait of inject: the fork answering, the API
// server reading from it.
const etcdForkWait = 60 * time.Second

type etcdForkParams struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	Tag  string `json:"tag"`
}

func (p etcdForkParams) check() error {
	var errs []error
	if p.Host == "" {
		errs = append(errs, errors.New("no host named"))
	}
	if p.Port < 1 || p.Port > 65534 {
		errs = append(errs, fmt.Errorf("port %d is not a TCP port with a port after it", p.Port))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// APIServerEtcdFork gives the API server on a control-plane host an etcd
// of its own: a one-member etcd started on that host and filled with a
// copy of every key of the cluster's etcd at one revision, to which the
// host's connections to the etcd members are redirected (its first
// member's address DNATed to the copy, the others refused). What a
// restored backup, or an --etcd-servers pointing at another cluster's etcd,
// does: from then on that server, and the controller-manager and
// scheduler that talk to it, live in another history. The copy's
// revisions are its own, counted from its first key, so lower than the
// cluster's. Nothing else changes: the other API servers, the virtual
// address, the kubelets and etcd itself go on as before.
//
// Heal removes the redirection, closes the host's connections to the copy
// (so the API server dials the members again) and stops the copy and
// deletes it. It needs the lab's help (lab.EtcdForks): the etcd binary and
// a member's certificate on the host.
func APIServerEtcdFork(host string) fault.Fault {
	return &etcdFork{p: etcdForkParams{Host: host, Port: DefaultEtcdForkPort, Tag: newTag()}}
}

type etcdFork struct{ p etcdForkParams }

func (f *etcdFork) Kind() string            { return KindAPIServerEtcdFork }
func (f *etcdFork) Class() fault.Class      { return ClassSplitBrain }
func (f *etcdFork) Params() json.RawMessage { return mustJSON(f.p) }
func (f *etcdFork) chain() string           { return chainName(f.p.Tag) }

// setup is what inject, heal and probe all need.
type etcdForkSetup struct {
	h      lab.Host
	fork   lab.EtcdFork
	dir    string
	member *url.URL
	others []*url.URL
}

func (f *etcdFork) setup(l lab.Lab, what string) (etcdForkSetup, error) {
	if err := f.p.check(); err != nil {
		return etcdForkSetup{}, fmt.Errorf("%s: %w", what, err)
	}
	h, err := hostByName(l, f.p.Host)
	if err != nil {
		return etcdForkSetup{}, fmt.Errorf("%s: %w", what, err)
	}
	if !h.HasRole(lab.RoleControlPlane) {
		return etcdForkSetup{}, fmt.Errorf("%s: %s runs no API server (roles %v)", what, h.Name(), h.Roles())
	}
	ef, ok := l.(lab.EtcdForks)
	if !ok {
		return etcdForkSetup{}, lab.Unsupported(l.Info().Kind, what, "the lab offers no way to run an etcd on a control-plane host (lab.EtcdForks)")
	}
	fk, err := ef.EtcdFork(h.Name())
	if err != nil {
		return etcdForkSetup{}, fmt.Errorf("%s: %w", what, err)
	}
	s := etcdForkSetup{h: h, fork: fk, dir: strings.TrimRight(fk.Dir, "/") + "/" + f.p.Tag}
	if fk.Dir == "" || !strings.HasPrefix(fk.Dir, "/") {
		return etcdForkSetup{}, fmt.Errorf("%s: the lab names no absolute directory for the fork on %s (%q)", what, h.Name(), fk.Dir)
	}
	if s.member, err = hostPortURL(fk.Member); err != nil {
		return etcdForkSetup{}, fmt.Errorf("%s: member: %w", what, err)
	}
	for _, o := range fk.Others {
		u, err := hostPortURL(o)
		if err != nil {
			return etcdForkSetup{}, fmt.Errorf("%s: other member: %w", what, err)
		}
		s.others = append(s.others, u)
	}
	return s, nil
}

// hostPortURL parses a client URL whose host is an IP address and which
// names its port: the iptables rules match on both.
func hostPortURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(u.Hostname()) == nil || u.Port() == "" {
		return nil, fmt.Errorf("%q: want https://<IP address>:<port>", raw)
	}
	return u, nil
}

// startScript starts the fork detached from the session, logging to its
// directory and recording its pid there; it refuses a directory that
// exists (a fault never adopts what it did not make) or a port in use.
func (f *etcdFork) startScript(s etcdForkSetup) string {
	addr := s.h.Address()
	client := fmt.Sprintf("https://%s:%d", addr, f.p.Port)
	peer := fmt.Sprintf("http://127.0.0.1:%d", f.p.Port+1)
	argv := []string{s.fork.Binary,
		"--name=faultline-fork", "--data-dir=" + s.dir + "/data",
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=faultline-fork=" + peer, "--initial-cluster-state=new",
		"--cert-file=" + s.fork.CertFile, "--key-file=" + s.fork.KeyFile,
		"--client-cert-auth", "--trusted-ca-file=" + s.fork.TrustedCAFile,
	}
	var q []string
	for _, a := range argv {
		q = append(q, shellQuote(a))
	}
	return script([]string{
		fmt.Sprintf("! [ -e %s ] || { echo 'the fork directory %s exists already' >&2; exit 1; }", shellQuote(s.dir), s.dir),
		fmt.Sprintf("[ -z \"$(ss -Hltn '( sport = :%d or sport = :%d )')\" ] || { echo 'port %d or %d is in use' >&2; exit 1; }", f.p.Port, f.p.Port+1, f.p.Port, f.p.Port+1),
		"mkdir -p " + shellQuote(s.dir),
		fmt.Sprintf("{ setsid %s > %s 2>&1 < /dev/null & echo $! > %s; }", strings.Join(q, " "), shellQuote(s.dir+"/etcd.log"), shellQuote(s.dir+"/pid")),
	})
}

// stopScript stops the fork of dir, if it runs, and removes dir, printing
// what it found and removed (healRun). The fork is the process its pid
// file names, and any other whose command line holds the argument
// --data-dir=<dir>/data (a start cut short before the pid file was
// written); a pid is only signalled while its command line holds that
// argument, whole. A zombie counts as stopped: its parent reaps it.
func stopScript(dir string) string {
	d := shellQuote(dir)
	arg := shellQuote("--data-dir=" + dir + "/data")
	return fmt.Sprintf(`alive() { [ -d /proc/$1 ] && ! grep -qs '^State:[[:space:]]*Z' /proc/$1/status; }; `+
		`pids=$({ cat %[1]s/pid 2>/dev/null; grep -lxzF -e %[2]s /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3; } | sort -u); `+
		`for pid in $pids; do `+
		`if grep -qxzF -e %[2]s /proc/$pid/cmdline 2>/dev/null; then echo "%[3]sthe fork's etcd, pid $pid"; kill -TERM $pid; `+
		`for i in $(seq 50); do alive $pid || break; sleep 0.1; done; `+
		`! alive $pid || kill -KILL $pid; echo "%[4]sthe fork's etcd, pid $pid"; fi; done; `+
		`if [ -e %[1]s ]; then echo "%[3]sthe fork's directory %[5]s"; rm -rf %[1]s || exit 1; echo "%[4]sthe fork's directory %[5]s"; fi`,
		d, arg, foundLine, removedLine, dir)
}

// natChainScript installs, in the nat table, the fault's chain DNATing the
// member's address and port to the fork, jumped to first from OUTPUT.
func (f *etcdFork) natChainScript(s etcdForkSetup) string {
	c := f.chain()
	return script([]string{
		"iptables -w -t nat -N " + c,
		fmt.Sprintf("iptables -w -t nat -A %s -p tcp -d %s --dport %s -j DNAT --to-destination %s:%d", c, s.member.Hostname(), s.member.Port(), s.h.Address(), f.p.Port),
		"iptables -w -t nat -I OUTPUT 1 -j " + c,
	})
}

func removeNatChainScript(chain string) string {
	return removeChainInTableScript("nat", chain)
}

// refuseRules refuse the other members' client ports from the host, so
// the API server's client can only reach the fork.
func (f *etcdFork) refuseRules(s etcdForkSetup) chainRules {
	var rules []string
	for _, o := range s.others {
		rules = append(rules, fmt.Sprintf("-p tcp -d %s --dport %s -j REJECT --reject-with tcp-reset", o.Hostname(), o.Port()))
	}
	return chainRules{chain: f.chain(), hooks: []string{"OUTPUT"}, rules: rules}
}

// etcdConnectionsFilter selects the established connections to the given
// addresses and ports, for closeConnectionsScript.
func etcdConnectionsFilter(dsts []*url.URL) string {
	var filters []string
	for _, u := range dsts {
		filters = append(filters, fmt.Sprintf("( dst %s and dport = :%s )", u.Hostname(), u.Port()))
	}
	return strings.Join(filters, " or ")
}

// forkClient is an etcd client of the fork, reached at the host's address
// with faultline's own etcd identity; the fork presents the member's
// certificate, so that is the name verified.
func (f *etcdFork) forkClient(l lab.Lab, s etcdForkSetup) (*clientv3.Client, error) {
	acc, ok := l.(lab.EtcdAccess)
	if !ok {
		return nil, lab.Unsupported(l.Info().Kind, "etcd fork", "the lab gives no etcd client access (lab.EtcdAccess)")
	}
	_, tlsConfig, err := acc.EtcdClientConfig()
	if err != nil {
		return nil, err
	}
	// gRPC verifies the name of the authority it dials, whatever the TLS
	// config says: the authority is the member's.
	return newEtcdClient("etcd fork", []string{fmt.Sprintf("https://%s:%d", s.h.Address(), f.p.Port)}, tlsConfig, grpc.WithAuthority(s.member.Host))
}

func (f *etcdFork) Inject(ctx context.Context, l lab.Lab) error {
	const what = "etcd fork"
	s, err := f.setup(l, what)
	if err != nil {
		return err
	}
	src, err := etcdClient(l, what)
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := run(ctx, s.h, f.startScript(s)); err != nil {
		return fmt.Errorf("%s: starting etcd on %s: %w", what, s.h.Name(), err)
	}
	crashpoint.Reach("apiserver-etcd-fork/inject/started")
	dst, err := f.forkClient(l, s)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", what, s.h.Name(), err)
	}
	defer dst.Close()
	if err := lab.WaitFor(ctx, "the fork on "+s.h.Name()+" to answer", etcdForkWait, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := dst.Status(c, dst.Endpoints()[0])
		return err == nil, err
	}); err != nil {
		return fmt.Errorf("%s: %w (its log: %s/etcd.log on %s)", what, err, s.dir, s.h.Name())
	}
	keys, rev, err := copyKeyspace(ctx, src, dst)
	if err != nil {
		return fmt.Errorf("%s: copying the cluster's keys to the fork on %s: %w", what, s.h.Name(), err)
	}
	crashpoint.Reach("apiserver-etcd-fork/inject/copied")
	if _, err := run(ctx, s.h, f.natChainScript(s)); err != nil {
		return fmt.Errorf("%s: redirecting %s: %w", what, s.member.Host, err)
	}
	crashpoint.Reach("apiserver-etcd-fork/inject/redirected")
	if _, err := run(ctx, s.h, f.refuseRules(s).installScript(s.h.Address())); err != nil {
		return fmt.Errorf("%s: refusing the other members: %w", what, err)
	}
	crashpoint.Reach("apiserver-etcd-fork/inject/refused")
	if _, err := run(ctx, s.h, closeConnectionsScript(etcdConnectionsFilter(append([]*url.URL{s.member}, s.others...)))); err != nil {
		return fmt.Errorf("%s: closing the API server's etcd connections: %w", what, err)
	}
	var last fault.Effect
	if err := lab.WaitFor(ctx, "the API server on "+s.h.Name()+" to read from the fork", etcdForkWait, time.Second, func(ctx context.Context) (bool, error) {
		e, err := f.Probe(ctx, l)
		last = e
		return e.Observed, err
	}); err != nil {
		return fmt.Errorf("%s: %d keys copied at revision %d: %w (last probe: %s)", what, keys, rev, err, last.Detail)
	}
	return nil
}

// copyKeyspace copies every key of src at one revision into dst, in pages
// and transactions small enough for etcd's limits, and returns how many
// keys it copied and at which revision.
func copyKeyspace(ctx context.Context, src, dst *clientv3.Client) (int, int64, error) {
	const page, perTxn = 500, 100
	var rev int64
	n := 0
	from := "\x00"
	for {
		opts := []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithLimit(page)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := src.Get(ctx, from, opts...)
		if err != nil {
			return n, rev, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for i := 0; i < len(resp.Kvs); i += perTxn {
			var ops []clientv3.Op
			for _, kv := range resp.Kvs[i:min(i+perTxn, len(resp.Kvs))] {
				ops = append(ops, clientv3.OpPut(string(kv.Key), string(kv.Value)))
			}
			if _, err := dst.Txn(ctx).Then(ops...).Commit(); err != nil {
				return n, rev, err
			}
			n += len(ops)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return n, rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func (f *etcdFork) Heal(ctx context.Context, l lab.Lab) error {
	const what = "healing etcd fork"
	s, err := f.setup(l, what)
	if err != nil {
		return err
	}
	if _, err := healRun(ctx, s.h, removeNatChainScript(f.chain())); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	crashpoint.Reach("apiserver-etcd-fork/heal/unredirected")
	if _, err := healRun(ctx, s.h, removeChainScript(f.chain(), s.h.Address())); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	crashpoint.Reach("apiserver-etcd-fork/heal/unrefused")
	// Connections made through the DNAT rule keep going to the fork
	// until it stops; stopping it closes them, and the API server dials
	// the members again, now unredirected.
	if _, err := healRun(ctx, s.h, stopScript(s.dir)); err != nil {
		return fmt.Errorf("%s: stopping the fork: %w", what, err)
	}
	return nil
}

// nodeLeasePrefix is where the kubelets' node Leases are kept in etcd. The
// probe reads one both ways: a kubelet renews its Lease every few
// seconds, so the cluster's copy of the key moves on while the fork's,
// filled once, keeps the small revision of its copy.
const nodeLeasePrefix = "/registry/leases/kube-node-lease/"

// Probe reads a node Lease through the API server on the host (a GET: a
// consistent read, which goes to etcd) and its key from the cluster's etcd
// and from the fork: the effect is there when the server returns the
// fork's modification revision rather than the cluster's.
func (f *etcdFork) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	s, err := f.setup(l, "probing etcd fork")
	if err != nil {
		return fault.Effect{}, err
	}
	kc, err := apiServerClient(l, s.h, nil)
	if err != nil {
		return fault.Effect{}, err
	}
	src, err := etcdClient(l, "probing etcd fork")
	if err != nil {
		return fault.Effect{}, err
	}
	defer src.Close()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	keys, err := src.Get(c, nodeLeasePrefix, clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly())
	if err != nil {
		return fault.Effect{}, fmt.Errorf("finding a node Lease in the cluster's etcd: %w", err)
	}
	if len(keys.Kvs) == 0 {
		return fault.Effect{}, fmt.Errorf("the cluster's etcd holds no node Lease under %s to probe with", nodeLeasePrefix)
	}
	key := string(keys.Kvs[0].Key)
	name := strings.TrimPrefix(key, nodeLeasePrefix)
	cluster, err := modRevision(c, src, key)
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading %s from the cluster's etcd: %w", key, err)
	}
	lease, err := kc.CoordinationV1().Leases("kube-node-lease").Get(c, name, metav1.GetOptions{})
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading Lease kube-node-lease/%s through the API server on %s: %w", name, s.h.Name(), err)
	}
	served := lease.ResourceVersion
	forked := "no fork answering"
	if dst, err := f.forkClient(l, s); err == nil {
		if r, err := modRevision(c, dst, key); err == nil {
			forked = strconv.FormatInt(r, 10)
		}
		dst.Close()
	}
	clusterRV := strconv.FormatInt(cluster, 10)
	return fault.Effect{
		Observed: served == forked && served != clusterRV,
		Detail: fmt.Sprintf("Lease kube-node-lease/%s through the API server on %s: resourceVersion %s; its key's modification revision in the cluster's etcd %s, in the fork %s",
			name, s.h.Name(), served, clusterRV, forked),
	}, nil
}

// modRevision reads a key's modification revision; a missing key is an
// error.
func modRevision(ctx context.Context, c *clientv3.Client, key string) (int64, error) {
	r, err := c.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(r.Kvs) == 0 {
		return 0, fmt.Errorf("no key %s", key)
	}
	return r.Kvs[0].ModRevision, nil
}

func init() {
	register(KindAPIServerEtcdFork, func(p etcdForkParams) fault.Fault { return &etcdFork{p: p} })
}
