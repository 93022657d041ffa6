package fault

import (
	"context"
	"fmt"
	"sync"
)

// HealAccount is what one heal (and release) found of its fault in the lab
// and what it removed or undid, one line each, in the order it happened.
// A heal from the heal ledger after a crash cannot know how far the inject
// got; its account says so: a fault found whole, found in part (on some
// hosts, some parts of a compound), or not found at all (the crash came
// before it was injected, or an earlier heal removed it).
type HealAccount struct {
	Found   []string `json:"found,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Empty reports whether the heal noted nothing: it found nothing of its
// fault to remove.
func (a HealAccount) Empty() bool { return len(a.Found)+len(a.Removed) == 0 }

type accountKey struct{}

type account struct {
	mu sync.Mutex
	a  HealAccount
}

type noting struct {
	acc    *account
	prefix string
}

// WithHealAccount returns a context in which Heal and Release note what
// they find and remove (Found, Removed), and a function that returns what
// was noted so far.
func WithHealAccount(ctx context.Context) (context.Context, func() HealAccount) {
	acc := &account{}
	ctx = context.WithValue(ctx, accountKey{}, noting{acc: acc})
	return ctx, func() HealAccount {
		acc.mu.Lock()
		defer acc.mu.Unlock()
		return HealAccount{Found: append([]string(nil), acc.a.Found...), Removed: append([]string(nil), acc.a.Removed...)}
	}
}

// Within returns a context whose notes are prefixed with prefix ("part 2
// (freeze): "), for a fault that heals other faults (a compound's parts,
// a control's cut, a null arm's decoy).
func Within(ctx context.Context, prefix string) context.Context {
	n, ok := ctx.Value(accountKey{}).(noting)
	if !ok {
		return ctx
	}
	n.prefix += prefix
	return context.WithValue(ctx, accountKey{}, n)
}

// Accounting reports whether ctx carries a heal account: a heal that must
// read the lab only to say what it found can skip the read without one.
func Accounting(ctx context.Context) bool {
	_, ok := ctx.Value(accountKey{}).(noting)
	return ok
}

// Found notes something of the fault a heal found in the lab (a chain on a
// host, a frozen process, a kept original). Without an account in ctx it
// does nothing.
func Found(ctx context.Context, format string, args ...any) {
	note(ctx, false, format, args...)
}

// Removed notes something a heal removed or undid. Without an account in
// ctx it does nothing.
func Removed(ctx context.Context, format string, args ...any) {
	note(ctx, true, format, args...)
}

func note(ctx context.Context, removed bool, format string, args ...any) {
	n, ok := ctx.Value(accountKey{}).(noting)
	if !ok {
		return
	}
	line := n.prefix + fmt.Sprintf(format, args...)
	n.acc.mu.Lock()
	defer n.acc.mu.Unlock()
	if removed {
		n.acc.a.Removed = append(n.acc.a.Removed, line)
	} else {
		n.acc.a.Found = append(n.acc.a.Found, line)
	}
}
