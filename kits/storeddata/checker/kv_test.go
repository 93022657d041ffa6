package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/electorlog/electortest"
	"github.com/faultline/faultline/fixtures/history"
)

var kvT0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

const (
	ok      = history.OutcomeOK
	fail    = history.OutcomeFail
	unknown = history.OutcomeUnknown
	fenced  = electorlog.FencingLeaseTransitions
)

func checkKV(t *testing.T, b *electortest.Bench) KV {
	t.Helper()
	r, err := CheckKV(b.Histories(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func checkFencing(t *testing.T, b *electortest.Bench) Fencing {
	t.Helper()
	f, err := CheckFencing(b.Histories())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// One leader after another, the follower reading between: one order,
// the tokens rising.
func TestCheckKVOneLeaderAfterAnother(t *testing.T) {
	b := electortest.New(t, kvT0)
	a, c := b.Writer("a", "worker1", fenced).Lead(1), b.Writer("c", "worker2", fenced)
	a.Increment("", "1", ok)
	a.Increment("1", "2", ok)
	c.Read("2")
	c.Lead(2).Increment("2", "3", ok)
	a.End(a.Begin(electortest.Key, "3", "4"), fail, "0000000002/"+c.Holder)
	a.Read("3")
	r := checkKV(t, b)
	if r.Result() != Linearizable || len(r.Keys) != 1 || r.Keys[0].Checked != 5 || r.Keys[0].Increments != 3 || len(r.Keys[0].LostUpdates) != 0 || r.Looked.Fail != 1 {
		t.Errorf("%s", r)
	}
	f := checkFencing(t, b)
	if f.Broken() || f.Looked.Accepted != 3 || f.Looked.Tokens != 2 || f.Looked.Refused != 1 || f.Looked.Fenced != 2 {
		t.Errorf("%s", f)
	}
}

// Two leaders read one value and both write over it: a lost update, no
// order of one copy.
func TestCheckKVTwoLeadersLoseAnUpdate(t *testing.T) {
	b := electortest.New(t, kvT0)
	a, c := b.Writer("a", "worker1", electorlog.FencingNone).Lead(1), b.Writer("c", "worker2", electorlog.FencingNone).Lead(2)
	a.Increment("", "1", ok)
	opA := a.Begin(electortest.Key, "1", "2")
	opC := c.Begin(electortest.Key, "1", "2")
	c.End(opC, ok, "")
	a.End(opA, ok, "")
	r := checkKV(t, b)
	if r.Result() != NotLinearizable || len(r.Keys[0].LostUpdates) != 1 {
		t.Fatalf("%s", r)
	}
	l := r.Keys[0].LostUpdates[0]
	if l[0].Writer.Node != "worker1" || l[1].Writer.Node != "worker2" || !strings.Contains(r.String(), "1 lost update(s)") {
		t.Errorf("%s", r)
	}
	// Unfenced, the store took the lower token after the higher.
	if f := checkFencing(t, b); f.Down == nil || f.Looked.Fenced != 0 {
		t.Errorf("%s", f)
	}
}

// A follower's read of a value an acknowledged write had replaced: no
// order, though no update is lost.
func TestCheckKVStaleRead(t *testing.T) {
	b := electortest.New(t, kvT0)
	a, c := b.Writer("a", "worker1", fenced).Lead(1), b.Writer("c", "worker2", fenced)
	a.Increment("", "1", ok)
	a.Increment("1", "2", ok)
	c.Read("1")
	r := checkKV(t, b)
	if r.Result() != NotLinearizable || len(r.Keys[0].LostUpdates) != 0 {
		t.Errorf("%s", r)
	}
}

// An increment of unknown outcome may have taken effect or not, and is
// never read as a value: a later read of either fits.
func TestCheckKVUnknownIncrementEitherWay(t *testing.T) {
	for _, after := range []string{"1", "2"} {
		b := electortest.New(t, kvT0)
		a, c := b.Writer("a", "worker1", fenced).Lead(1), b.Writer("c", "worker2", fenced)
		a.Increment("", "1", ok)
		a.Increment("1", "2", unknown)
		c.Read(after)
		r := checkKV(t, b)
		if r.Result() != Linearizable || r.Keys[0].Unknown != 1 || r.Keys[0].Increments != 1 {
			t.Errorf("read %s after an unknown increment: %s", after, r)
		}
		// A read of its value proves it accepted (nobody else wrote 2).
		proven := 0
		if after == "2" {
			proven = 1
		}
		if f := checkFencing(t, b); f.Broken() || f.Looked.Unknown != 1-proven || f.Looked.Proven != proven || f.Looked.Accepted != 1 {
			t.Errorf("%s", f)
		}
	}
	// An increment in flight (the writer died after storing its value)
	// may have taken effect: a read of its value fits.
	b := electortest.New(t, kvT0)
	a, c := b.Writer("a", "worker1", fenced).Lead(1), b.Writer("c", "worker2", fenced)
	a.Begin(electortest.Key, "", "1")
	c.Read("1")
	if r := checkKV(t, b); r.Result() != Linearizable {
		t.Errorf("%s", r)
	}
	// A read of a value nobody wrote after the history began fits no
	// order.
	c.Read("9")
	if r := checkKV(t, b); r.Result() != NotLinearizable {
		t.Errorf("%s", r)
	}
}

// A put that timed out lands later (etcd may commit a request its client
// gave up on): the store does a blind put, so a writer's own unknown
// write may overwrite its later acknowledged ones at any moment, and the
// writer's next read sees the old value again. One writer, one order.
func TestCheckKVUnknownPutThatLandsLater(t *testing.T) {
	for _, fencing := range []string{electorlog.FencingNone, fenced} {
		b := electortest.New(t, kvT0)
		a := b.Writer("a", "worker1", fencing).Lead(1)
		a.Increment("", "1", ok)
		a.Increment("1", "2", unknown) // timed out; it lands two increments later
		a.Increment("1", "2", ok)
		a.Increment("2", "3", ok)
		a.Increment("2", "3", ok) // the late put set 2 again
		a.Increment("3", "4", ok)
		r := checkKV(t, b)
		if r.Result() != Linearizable || len(r.Keys[0].LostUpdates) != 0 {
			t.Errorf("fencing %s: one writer whose timed-out put landed late: %s", fencing, r)
		}
	}
}

// The fenced store's transaction checks the token only: a deposed
// leader's timed-out write cannot land once a higher token was accepted,
// so a read of its value after the new leader's writes fits no order.
func TestCheckKVFencedUnknownWriteCannotLandUnderAHigherToken(t *testing.T) {
	for _, c := range []struct {
		fencing string
		want    Linearizability
	}{{electorlog.FencingNone, Linearizable}, {fenced, NotLinearizable}} {
		b := electortest.New(t, kvT0)
		a, n, f := b.Writer("a", "worker1", c.fencing).Lead(1), b.Writer("n", "worker2", c.fencing), b.Writer("f", "worker3", c.fencing)
		a.Increment("", "1", ok)
		a.Increment("1", "7", unknown) // a value no one else writes
		n.Lead(2).Increment("1", "2", ok)
		n.Increment("2", "3", ok)
		f.Read("7")
		if r := checkKV(t, b); r.Result() != c.want {
			t.Errorf("fencing %s: a read of the deposed leader's unknown value after the new leader's writes: %s, want %s", c.fencing, r.Result(), c.want)
		}
	}
}

// A counter that held a value before the history: its first read shows
// it, and the history starts from it.
func TestCheckKVStartsFromTheValueFirstRead(t *testing.T) {
	b := electortest.New(t, kvT0)
	a := b.Writer("a", "worker1", fenced).Lead(4)
	a.Increment("7", "8", ok)
	a.Increment("8", "9", ok)
	r := checkKV(t, b)
	if r.Result() != Linearizable || r.Keys[0].Start != "7" {
		t.Errorf("%s", r)
	}
}

// The store accepts a lower token after a higher one: the token went
// down. An unknown write of a lower token is not counted.
func TestCheckFencingTokenWentDown(t *testing.T) {
	b := electortest.New(t, kvT0)
	a, c := b.Writer("a", "worker1", fenced).Lead(1), b.Writer("c", "worker2", fenced).Lead(2)
	c.Increment("", "1", ok)
	a.Increment("1", "2", unknown)
	if f := checkFencing(t, b); f.Broken() {
		t.Fatalf("an unknown write is never an accepted one: %s", f)
	}
	a.Increment("1", "2", ok)
	f := checkFencing(t, b)
	if f.Down == nil || f.Down[0].Writer.Node != "worker2" || f.Down[1].Writer.Node != "worker1" || f.Shared != nil {
		t.Errorf("%s", f)
	}
	if !strings.Contains(f.String(), "token went down") {
		t.Errorf("%s", f)
	}
}

// Two holders accepted with one leaseTransitions (a Lease forked between
// two API servers gives both the same value).
func TestCheckFencingOneTokenTwoHolders(t *testing.T) {
	b := electortest.New(t, kvT0)
	a, c := b.Writer("a", "worker1", fenced).Lead(3), b.Writer("c", "worker2", fenced).Lead(3)
	a.Increment("", "1", ok)
	c.Increment("1", "2", ok)
	a.Increment("2", "3", ok)
	f := checkFencing(t, b)
	if f.Shared == nil || f.Down != nil || f.Shared[0].Writer.Node != "worker1" || f.Shared[1].Writer.Node != "worker2" || f.Looked.Tokens != 1 {
		t.Errorf("%s", f)
	}
}

// A write of unknown outcome that a later read proves accepted (the only
// write of the value the read returned) counts as accepted: two holders
// with one token, one of them proven only by the read.
func TestCheckFencingUnknownWriteProvenByARead(t *testing.T) {
	b := electortest.New(t, kvT0)
	a, c, f := b.Writer("a", "worker1", fenced).Lead(3), b.Writer("c", "worker2", fenced).Lead(3), b.Writer("f", "worker3", fenced)
	a.Increment("", "1", ok)
	c.Increment("1", "2", unknown)
	if g := checkFencing(t, b); g.Broken() {
		t.Fatalf("nothing read the unknown write yet: %s", g)
	}
	f.Read("2")
	g := checkFencing(t, b)
	if g.Shared == nil || g.Shared[1].Writer.Node != "worker2" || g.Looked.Proven != 1 || g.Looked.Unknown != 0 {
		t.Fatalf("a read proves the unknown write accepted, with the token a's writes had: %s", g)
	}
	if !strings.Contains(g.String(), "proven accepted by") {
		t.Errorf("%s", g)
	}

	// Another write of the same value leaves the read no proof of which.
	b = electortest.New(t, kvT0)
	a, c, f = b.Writer("a", "worker1", fenced).Lead(3), b.Writer("c", "worker2", fenced).Lead(3), b.Writer("f", "worker3", fenced)
	a.Increment("", "1", ok)
	c.Increment("1", "2", unknown)
	a.Increment("1", "2", unknown)
	f.Read("2")
	if g := checkFencing(t, b); g.Broken() || g.Looked.Proven != 0 || g.Looked.Unknown != 2 {
		t.Errorf("two unknown writes of one value, one read of it: %s", g)
	}
}
