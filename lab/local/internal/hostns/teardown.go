package hostns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/mounts"
)

// What teardown removes of a lab's network, found by the names derived
// from the lab's alone.

// ReleaseNetnsDir undoes ensureNetnsDir once no namespace is left in it
// (another lab's or anyone's keeps it as it is).
func ReleaseNetnsDir() error {
	ents, err := os.ReadDir(layout.NetnsDir)
	if err != nil || len(ents) > 0 {
		return nil
	}
	if mps, _ := mounts.Under(layout.NetnsDir); len(mps) != 1 || mps[0] != layout.NetnsDir {
		return nil
	}
	if err := syscall.Unmount(layout.NetnsDir, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmounting %s: %w", layout.NetnsDir, err)
	}
	return nil
}

// DeleteLabLinks removes every root-namespace link whose alias names this
// lab: the bridges and the root ends of the hosts' veths.
func DeleteLabLinks(labName string) error {
	links, err := listLinks()
	if err != nil {
		return fmt.Errorf("listing links: %w", err)
	}
	prefix := layout.InterfaceAliasPrefix + labName + ":"
	var errs []error
	// veths first, bridges last.
	for _, pass := range []bool{false, true} {
		for _, l := range links {
			if !strings.HasPrefix(l.Attrs().Alias, prefix) {
				continue
			}
			if (l.Type() == "bridge") != pass {
				continue
			}
			if err := netlink.LinkDel(l); err != nil {
				var nf netlink.LinkNotFoundError
				// A veth goes with its peer's namespace: gone is fine.
				if !errors.As(err, &nf) && !errors.Is(err, syscall.ENODEV) && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("deleting link %s: %w", l.Attrs().Name, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// LabIptablesRules lists the root namespace's filter rules that carry the
// lab's comment, as iptables -S prints them.
func LabIptablesRules(ctx context.Context, labName string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "iptables", "-w", "-S").Output()
	if err != nil {
		return nil, fmt.Errorf("listing iptables rules: %w", err)
	}
	var rules []string
	tag := fmt.Sprintf("--comment %q", layout.IptablesComment(labName))
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "-A ") && strings.Contains(line, tag) {
			rules = append(rules, line)
		}
	}
	return rules, nil
}

func DeleteIptablesRules(ctx context.Context, labName string) error {
	rules, err := LabIptablesRules(ctx, labName)
	if err != nil {
		return err
	}
	for _, r := range rules {
		args := splitIptablesRule(strings.TrimPrefix(r, "-A "))
		if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w", "-D"}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("deleting iptables rule %q: %v: %s", r, err, out)
		}
	}
	return nil
}

// splitIptablesRule splits an iptables -S line into arguments, keeping
// double-quoted words (comments) whole.
func splitIptablesRule(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			have = true
		case r == ' ' && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
