package hostssh

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/internal/sshdtest"
)

// sshdtestKey is a key of the lab's SSH material as the test sshd takes it.
func sshdtestKey(t *testing.T, path string) sshdtest.Key {
	t.Helper()
	b, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return sshdtest.Key{Path: path, Public: pub}
}

// A host's client is made with the lab, before Up makes the key and the
// known_hosts it needs; once they exist it reaches the host as root, its
// host key checked.
func TestHostClientUsesTheMaterialMadeAfterIt(t *testing.T) {
	sshdtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	files := Files{Dir: t.TempDir()}
	port := sshdtest.FreePort(t, []string{"127.0.0.1"})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c, err := files.Client(lab.HostConfig{Name: "h1", Address: addr})
	if err != nil {
		t.Fatalf("client before the lab's SSH material exists: %v", err)
	}
	defer c.Close()
	if _, err := c.Run(ctx, "true"); err == nil || !strings.Contains(err.Error(), files.ClientKey()) || !strings.Contains(err.Error(), "h1") {
		t.Fatalf("Run before the key exists: %v, want an error naming the host and the key file", err)
	}

	if err := Ensure(files, "t", map[string]string{"h1": addr}); err != nil {
		t.Fatal(err)
	}
	sshdtest.Start(t, sshdtest.Config{
		Port:           port,
		HostKey:        sshdtestKey(t, files.HostKey("h1")),
		AuthorizedKeys: []sshdtest.Key{sshdtestKey(t, files.ClientKey())},
	})
	res, err := c.Run(ctx, "id -un")
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "root" {
		t.Fatalf("Run once the material exists = %+v, %v, want root", res, err)
	}
}

// A lab with a sudo user gives it a key of its own, read by root for
// sshd, in a Match block that ends the config; sshd accepts the config.
func TestSSHDConfigTakesTheSudoUsersKey(t *testing.T) {
	sshdtest.Require(t)
	files := Files{Dir: t.TempDir(), SudoUser: "fl-t"}
	if err := Ensure(files, "t", map[string]string{"h1": "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := EnsureUserKey(files, "t"); err != nil {
		t.Fatal(err)
	}
	auth, err := os.ReadFile(files.UserAuthorizedKeys())
	if err != nil {
		t.Fatal(err)
	}
	if pub := sshdtestKey(t, files.UserKey()); strings.TrimSpace(string(auth)) != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub.Public))) {
		t.Errorf("authorized_keys %q is not the user's key", auth)
	}
	conf := SSHDConfig(files, "h1", "127.0.0.1", []string{"PATH=/usr/bin"})
	_, match, ok := strings.Cut(conf, "Match User fl-t\n")
	if !ok || !strings.Contains(match, "AuthorizedKeysCommand /usr/bin/cat "+files.UserAuthorizedKeys()) || !strings.Contains(match, "AuthorizedKeysFile none") {
		t.Fatalf("config without the user's Match block last:\n%s", conf)
	}
	path := files.SSHDConfigFile("h1")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("/usr/sbin/sshd", "-t", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("sshd -t: %v\n%s", err, out)
	}
	if conf := SSHDConfig(Files{Dir: files.Dir}, "h1", "127.0.0.1", nil); strings.Contains(conf, "Match") {
		t.Errorf("a lab without a sudo user has a Match block:\n%s", conf)
	}
}
