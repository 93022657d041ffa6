package splitbrain

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/lab"
)

// noLab is a lab with storage and file system checks whose every
// address refuses: each question asked is answered unreadable, quickly,
// so a snapshot shows which questions were asked. Nothing of it is
// shared, as two labs of a pool share nothing.
type noLab struct {
	kubeconfig string
	hosts      []lab.Host
}

var errRefused = errors.New("refused")

type noHost struct{ name string }

func (h noHost) Name() string                                         { return h.name }
func (noHost) Roles() []lab.Role                                      { return []lab.Role{lab.RoleControlPlane} }
func (noHost) HasRole(r lab.Role) bool                                { return r == lab.RoleControlPlane }
func (noHost) Address() string                                        { return "127.0.0.1" }
func (noHost) Run(context.Context, string) (lab.Result, error)        { return lab.Result{}, errRefused }
func (noHost) Dial(context.Context, string, string) (net.Conn, error) { return nil, errRefused }
func (noHost) StopService(context.Context, string) error              { return errRefused }
func (noHost) StartService(context.Context, string) error             { return errRefused }
func (noHost) Signal(context.Context, string, syscall.Signal) error   { return errRefused }
func (noHost) Services(context.Context) ([]lab.ServiceState, error)   { return nil, errRefused }
func (noHost) PowerOff(context.Context) error                         { return errRefused }
func (noHost) PowerOn(context.Context) error                          { return errRefused }
func (l *noLab) Info() lab.Info                                       { return lab.Info{Name: "nolab", Kind: "test"} }
func (l *noLab) Config() *lab.Config                                  { return &lab.Config{Name: "nolab"} }
func (l *noLab) Timers() (lab.Timers, error)                          { return lab.Timers{}, errRefused }
func (l *noLab) Hosts() []lab.Host                                    { return l.hosts }
func (l *noLab) Host(string) (lab.Host, error)                        { return l.hosts[0], nil }
func (l *noLab) Kubeconfig(string) (string, error)                    { return l.kubeconfig, nil }
func (l *noLab) StateDir() string                                     { return "" }
func (l *noLab) Reset(context.Context) error                          { return nil }
func (l *noLab) Status(context.Context) (lab.Status, error)           { return lab.Status{}, nil }
func (l *noLab) Close() error                                         { return nil }
func (l *noLab) StorageInfo() (lab.StorageInfo, error) {
	return lab.StorageInfo{HistoryEndpoints: []string{"http://127.0.0.1:1"}}, nil
}
func (l *noLab) ReadVolumeFile(context.Context, string, string) (lab.VolumeFile, error) {
	return lab.VolumeFile{}, errRefused
}
func (l *noLab) CheckVolumeFilesystem(context.Context, string) (lab.VolumeFilesystem, error) {
	return lab.VolumeFilesystem{}, errRefused
}

func newNoLab(t *testing.T) *noLab {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters:
- name: nolab
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: nolab
  user: {token: none}
contexts:
- name: nolab
  context: {cluster: nolab, user: nolab}
current-context: nolab
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return &noLab{kubeconfig: path, hosts: []lab.Host{noHost{"cp1"}}}
}

// suiteAsked are the questions snap holds of the suite's own sources.
func suiteAsked(snap evidence.Snapshot) string {
	var out []string
	for _, src := range []evidence.Source{LedgerSource, KVDBSource, ElectorSource, VolumeSource} {
		for q := range snap.Answers[src] {
			out = append(out, string(q))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// runsOfThePaper are three runs of different scenarios, each with the
// suite's questions it must ask: the ledger on a block volume (its file,
// its histories and the volume's file system), the database on a shared
// directory, the elector (no volume).
var runsOfThePaper = []struct {
	run  evidence.Run
	want string
}{
	{evidence.Run{ID: "ledger-fault-1", Scenario: "ledger", Arm: "fault", Labels: []string{"arm:fault", "paper:splitbrain", "volume:block", "workload:ledger"}},
		"ledger/history ledger/log volume/fsck"},
	{evidence.Run{ID: "kvdb-null-1", Scenario: "kvdb", Arm: "null", Labels: []string{"arm:null", "paper:splitbrain", "volume:shared", "workload:kvdb"}},
		"kvdb/db kvdb/history"},
	{evidence.Run{ID: "elector-fault-1", Scenario: "elector", Arm: "fault", Labels: []string{"arm:fault", "fencing:none", "paper:splitbrain", "workload:elector"}},
		"elector/history"},
}

func newSuiteSampler() *sampler.Sampler {
	return sampler.New(sampler.Options{Extras: Extras(), NoTimeline: true,
		ReadTimeout: 300 * time.Millisecond, CommandReadTimeout: 300 * time.Millisecond,
		ExtraReadTimeout: 300 * time.Millisecond, ExtraRequestTimeout: 300 * time.Millisecond})
}

// Runs sampled one after the other by one sampler, as one lab runs a
// suite, each ask their own workloads' questions and none of the run
// before: the readers take the run from the sampler (sampler.Env.Run).
func TestEachRunAsksItsOwnWorkloadsQuestions(t *testing.T) {
	s := newSuiteSampler()
	defer s.Close()
	l := newNoLab(t)
	for _, c := range runsOfThePaper {
		s.BeginRun(c.run)
		snap, _, err := s.Sample(t.Context(), l)
		if err != nil {
			t.Fatal(err)
		}
		if got := suiteAsked(snap); got != c.want {
			t.Errorf("run %s asked %q, want %q", c.run.ID, got, c.want)
		}
	}
}

// Runs sampled at the same time by samplers of their own, as a pool of
// labs in one process would run them, each ask their own workloads'
// questions: nothing that says which workloads a run uses is shared
// between runs. The runs begin before any of them samples, as one run's
// Prepare may come while another samples its window.
func TestConcurrentRunsAskTheirOwnWorkloadsQuestions(t *testing.T) {
	samplers := make([]*sampler.Sampler, len(runsOfThePaper))
	for i, c := range runsOfThePaper {
		samplers[i] = newSuiteSampler()
		defer samplers[i].Close()
		samplers[i].BeginRun(c.run)
	}
	got := make([][]string, len(runsOfThePaper))
	var wg sync.WaitGroup
	for i := range runsOfThePaper {
		l := newNoLab(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				snap, _, err := samplers[i].Sample(context.Background(), l)
				if err != nil {
					got[i] = append(got[i], "error: "+err.Error())
					continue
				}
				got[i] = append(got[i], suiteAsked(snap))
			}
		}()
	}
	wg.Wait()
	for i, c := range runsOfThePaper {
		for _, g := range got[i] {
			if g != c.want {
				t.Errorf("run %s asked %q, want %q", c.run.ID, g, c.want)
			}
		}
	}
}
