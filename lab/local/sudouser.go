package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/faultline/faultline/lab/local/internal/hostssh"
)

// The sudo user is a non-root login on every host of the lab, with
// passwordless sudo and a key of its own: what a static lab file that
// reaches this lab as it would a fleet logs in as. The hosts share the
// machine's users, so it is one user of the machine, made on demand
// (AddSudoUser) and removed by down.

// SudoUser is the lab's sudo user and what a static lab needs to reach
// the hosts as it.
type SudoUser struct {
	// Name is the login.
	Name string
	// KeyFile is its private key; KnownHosts pins every host's key.
	KeyFile    string
	KnownHosts string
}

// SudoUserName is the sudo user of lab labName: "fl-" and the name, cut
// to the 32 characters a Linux user name may have.
func SudoUserName(labName string) string {
	n := "fl-" + labName
	if len(n) > 32 {
		n = n[:32]
	}
	return n
}

// sudoersFile is the lab's sudoers drop-in; its presence says the user is
// the lab's.
func sudoersFile(labName string) string { return "/etc/sudoers.d/faultline-" + labName }

// sudoUserComment marks the user as the lab's in its passwd entry.
func sudoUserComment(labName string) string { return "faultline lab " + labName }

// sudoers lets name run anything as root without a password, keeping the
// PATH and the container runtime's address its SSH session gets (the
// hosts' sshd sets them: the lab's binaries, each node's own socket), as
// a fleet's crictl finds its runtime in /etc/crictl.yaml.
func sudoers(labName, name string) string {
	return fmt.Sprintf(`# %s: the login a static lab reaches this local lab as.
Defaults:%[2]s !requiretty
Defaults:%[2]s !secure_path
Defaults:%[2]s env_keep += "CONTAINER_RUNTIME_ENDPOINT IMAGE_SERVICE_ENDPOINT CONTAINERD_ADDRESS CONTAINERD_NAMESPACE"
%[2]s ALL=(root) NOPASSWD: ALL
`, sudoUserComment(labName), name)
}

// AddSudoUser makes the lab's sudo user, if the machine has none of that
// name, its key and its sudoers drop-in (checked with visudo before it
// is put in place). It refuses a user of that name that is not the
// lab's. Every host's sshd takes the user's key from then on.
func (l *Lab) AddSudoUser(ctx context.Context) (SudoUser, error) {
	name := l.ssh.SudoUser
	out := SudoUser{Name: name, KeyFile: l.ssh.UserKey(), KnownHosts: l.ssh.KnownHosts()}
	if _, err := exec.LookPath("sudo"); err != nil {
		return out, fmt.Errorf("lab %s: the sudo user needs sudo (Debian package sudo): %w", l.cfg.Name, err)
	}
	switch u, err := user.Lookup(name); {
	case err == nil && u.Name != sudoUserComment(l.cfg.Name):
		return out, fmt.Errorf("lab %s: the machine has a user %s that is not the lab's (%q)", l.cfg.Name, name, u.Name)
	case err == nil:
	default:
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return out, fmt.Errorf("lab %s: looking up user %s: %w", l.cfg.Name, name, err)
		}
		// Home "/": sshd changes to it, and the lab's state dir is root's.
		if err := run(ctx, "useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/",
			"--shell", "/bin/sh", "--comment", sudoUserComment(l.cfg.Name), name); err != nil {
			return out, fmt.Errorf("lab %s: adding user %s: %w", l.cfg.Name, name, err)
		}
		// A locked password ("!") keeps sshd without PAM from letting the
		// user in even with a key; "*" allows no password either.
		if err := run(ctx, "usermod", "--password", "*", name); err != nil {
			return out, fmt.Errorf("lab %s: unlocking user %s for key logins: %w", l.cfg.Name, name, err)
		}
	}
	if err := hostssh.EnsureUserKey(l.ssh, l.cfg.Name); err != nil {
		return out, fmt.Errorf("lab %s: %w", l.cfg.Name, err)
	}
	tmp := filepath.Join(filepath.Dir(l.ssh.UserKey()), "sudoers")
	if err := os.WriteFile(tmp, []byte(sudoers(l.cfg.Name, name)), 0o440); err != nil {
		return out, fmt.Errorf("lab %s: writing the sudoers drop-in: %w", l.cfg.Name, err)
	}
	if err := run(ctx, "visudo", "-cqf", tmp); err != nil {
		return out, fmt.Errorf("lab %s: the sudoers drop-in does not check: %w", l.cfg.Name, err)
	}
	if err := os.MkdirAll("/etc/sudoers.d", 0o755); err != nil {
		return out, err
	}
	if err := os.Rename(tmp, sudoersFile(l.cfg.Name)); err != nil {
		return out, fmt.Errorf("lab %s: installing the sudoers drop-in: %w", l.cfg.Name, err)
	}
	return out, nil
}

// removeSudoUser removes the lab's sudo user and its sudoers drop-in, if
// the lab made them (the drop-in is there and the user's entry names the
// lab); a user of that name that is not the lab's is left alone.
func removeSudoUser(ctx context.Context, labName string) error {
	file := sudoersFile(labName)
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	name := SudoUserName(labName)
	if u, err := user.Lookup(name); err == nil && u.Name == sudoUserComment(labName) {
		if err := run(ctx, "userdel", name); err != nil {
			return fmt.Errorf("removing the sudo user %s: %w", name, err)
		}
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", file, err)
	}
	return nil
}

// run runs a command of the machine, its output in the error.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
