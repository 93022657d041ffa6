package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// chainRules are one fault's iptables rules on one host: a chain of
// faultline's own holding the rules, jumped to first from the built-in
// chains in hooks. Heal deletes the jumps and the chain, and nothing else.
type chainRules struct {
	chain string
	hooks []string
	rules []string
}

// hooks every fault chain may be jumped to from; heal looks in all of them
// so it needs no record of which ones inject used.
var allHooks = []string{"INPUT", "OUTPUT", "FORWARD"}

// installScript creates the chain, fills it and only then jumps to it, so
// a half-done install cuts nothing. `-N` fails if the chain exists: a
// fault never adopts rules it did not write.
//
// A host whose filter table does not exist yet (an nftables host where
// nothing used iptables) gets a marker, so heal can take away the table
// inject brought into being along with the chain.
func (c chainRules) installScript(hostAddr string) string {
	cmds := []string{
		`{ iptables-save 2>/dev/null | grep -q '^\*filter' || touch ` + filterMarker(c.chain, hostAddr) + `; }`,
		"iptables -w -N " + c.chain,
	}
	for _, r := range c.rules {
		cmds = append(cmds, "iptables -w -A "+c.chain+" "+r)
	}
	for _, h := range c.hooks {
		cmds = append(cmds, "iptables -w -I "+h+" 1 -j "+c.chain)
	}
	return script(cmds)
}

// filterMarker names the file saying inject created the host's filter
// table. Hosts of the local lab share /run, so it names the host too.
func filterMarker(chain, hostAddr string) string {
	return "/run/faultline-" + chain + "-" + hostAddr + ".created-filter-table"
}

// removeChainScript removes every jump to chain and the chain itself; on a
// host without the chain it does nothing and succeeds. If inject created
// the filter table and it holds nothing but empty built-in chains with
// the ACCEPT policy, the table goes too. It prints what it found and what
// it removed (healRun).
func removeChainScript(chain, hostAddr string) string {
	return removeChainInTableScript("filter", chain) + "; " + removeFilterTableScript(chain, hostAddr)
}

// removeChainInTableScript removes chain from the table with every jump
// to it from a built-in chain, printing what it found and removed.
func removeChainInTableScript(table, chain string) string {
	ipt := "iptables -w -t " + table
	var b strings.Builder
	fmt.Fprintf(&b, "if %s -n -L %s >/dev/null 2>&1; then n=$(%s -S %s | grep -c -- '^-A '); j=; ", ipt, chain, ipt, chain)
	for _, h := range allHooks {
		if table == "nat" && h == "FORWARD" {
			continue // the nat table has no FORWARD chain
		}
		fmt.Fprintf(&b, "while %s -D %s -j %s 2>/dev/null; do j=\"$j %s\"; done; ", ipt, h, chain, h)
	}
	fmt.Fprintf(&b, `echo "%siptables %s chain %s ($n rules), jumped to from:${j:- nowhere}"; `, foundLine, table, chain)
	fmt.Fprintf(&b, "%s -F %s && %s -X %s || exit 1; ", ipt, chain, ipt, chain)
	fmt.Fprintf(&b, `echo "%siptables %s chain %s and its jumps"; fi`, removedLine, table, chain)
	return b.String()
}

// removeFilterTableScript removes the filter table inject brought into
// being (its marker says so), if it holds nothing of anyone else's.
func removeFilterTableScript(chain, hostAddr string) string {
	m := filterMarker(chain, hostAddr)
	return fmt.Sprintf(`if [ -e %[1]s ]; then echo "%[2]smarker %[1]s (inject created the filter table)"; `+
		`if [ -z "$(iptables-save -t filter | grep -v -e '^#' -e '^\*filter' -e '^COMMIT' -e '^:INPUT ACCEPT' -e '^:FORWARD ACCEPT' -e '^:OUTPUT ACCEPT')" ] && command -v nft >/dev/null; then nft delete table ip filter || exit 1; echo "%[3]sthe filter table inject created"; fi; `+
		`rm -f %[1]s; echo "%[3]smarker %[1]s"; fi`, m, foundLine, removedLine)
}

// removeChainEverywhere runs the removal on every host of the lab and
// joins the failures; a host that cannot be reached is an error (its rules
// may still be there). point is the crash point reached after each host.
func removeChainEverywhere(ctx context.Context, l lab.Lab, chain, point string) error {
	var errs []string
	for _, h := range l.Hosts() {
		if _, err := healRun(ctx, h, removeChainScript(chain, h.Address())); err != nil {
			errs = append(errs, err.Error())
		}
		crashpoint.Reach(point)
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing iptables chain %s: %s", chain, strings.Join(errs, "; "))
	}
	return nil
}

// chainDrops reads how many packets chain's rules dropped on h.
func chainDrops(ctx context.Context, h lab.Host, chain string) (int64, error) {
	out, err := run(ctx, h, "iptables -w -n -v -x -L "+chain)
	if err != nil {
		return 0, err
	}
	return parseChainDrops(out)
}

func parseChainDrops(listing string) (int64, error) {
	var total int64
	for _, line := range strings.Split(listing, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "DROP" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading packet count of %q: %w", line, err)
		}
		total += n
	}
	return total, nil
}

// connectProbeTimeout is how long, in seconds, a cut's probe waits for an
// answer to its connect.
const connectProbeTimeout = 3

// connectEffect is a cut's effect from a connect's result: seen when the
// connect timed out, and then seen to hold for the whole wait (nothing
// answered any of the SYNs sent in it).
func connectEffect(res, detail string) fault.Effect {
	e := fault.Effect{Observed: res == "timed out", Detail: detail}
	if e.Observed {
		e.Lasted = connectProbeTimeout * time.Second
	}
	return e
}

// tcpConnect tries a TCP connection from h to addr:port. It reports
// "connected", "refused" (the peer answered: nothing dropped the SYN) or
// "timed out" (no answer within the timeout: dropped on the way).
func tcpConnect(ctx context.Context, h lab.Host, addr string, port, timeoutSeconds int) (string, error) {
	cmd := fmt.Sprintf("timeout %d bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/dev/null; echo $?", timeoutSeconds, addr, port)
	out, err := run(ctx, h, cmd)
	if err != nil {
		return "", err
	}
	switch code := strings.TrimSpace(out); code {
	case "0":
		return "connected", nil
	case "124":
		return "timed out", nil
	case "1":
		return "refused", nil
	default:
		return "", fmt.Errorf("%s: connecting to %s:%d: bash exited %s", h.Name(), addr, port, code)
	}
}

// sshPort is the port every lab host listens on for SSH: a connection to
// it from another host answers unless something drops it.
func sshPort(l lab.Lab) int {
	if s := l.Config().SSH; s != nil && s.Port != 0 {
		return s.Port
	}
	return 22
}
