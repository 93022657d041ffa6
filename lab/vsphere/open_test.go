package vsphere

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// openErr opens the lab with the SSH step injected and returns the error.
func openErr(ctx context.Context, t *testing.T, c *lab.Config) error {
	t.Helper()
	l, err := Open(ctx, c, WithRemoteHosts(func(hc lab.HostConfig, _ *lab.Config, power Power) (RemoteHost, error) {
		return &fakeRemote{hc: hc, power: power, journal: &journal{}}, nil
	}))
	if err == nil {
		_ = l.Close()
	}
	return err
}

func TestOpenRefusesWrongCredentials(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	wrong := "not-the-Password-42"
	c := f.writeConfig(f.configYAML("cold"), simUser, wrong)
	err := openErr(ctx, t, c)
	if err == nil {
		t.Fatal("Open logged in with a wrong password")
	}
	want := "vCenter " + f.url.String() + " refused the login for user " + simUser
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	for _, secret := range []string{wrong, simPassword} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows a password", err)
		}
	}
}

func TestOpenReadsCredentialsFromEnvironment(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	text := strings.Replace(f.configYAML("cold"), "  credentialsFile: credentials.yaml\n", "", 1)
	c := f.writeConfig(text, "unused", "unused")
	if sectionOf(c).CredentialsFile != "" {
		t.Fatal("the lab file still names a credentials file")
	}

	t.Setenv(EnvUsername, simUser)
	t.Setenv(EnvPassword, "")
	err := openErr(ctx, t, c)
	if err == nil || !strings.Contains(err.Error(), EnvPassword+" is not set") || !strings.Contains(err.Error(), "vsphere.credentialsFile") {
		t.Errorf("without a password: error %v, want one naming %s and vsphere.credentialsFile", err, EnvPassword)
	}

	t.Setenv(EnvPassword, simPassword)
	if err := openErr(ctx, t, c); err != nil {
		t.Errorf("Open with credentials from the environment: %v", err)
	}
}

func TestOpenRefusesBadCredentialsFile(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	c := f.config()
	path := filepath.Join(f.dir, "credentials.yaml")
	if err := os.WriteFile(path, []byte("username: a\npasword: s3cret-typo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := openErr(ctx, t, c)
	if err == nil || !strings.Contains(err.Error(), "vsphere.credentialsFile "+path) {
		t.Fatalf("error %v does not name vsphere.credentialsFile and its path", err)
	}
	if strings.Contains(err.Error(), "s3cret-typo") {
		t.Errorf("error %q shows the file's content", err)
	}
}

func TestOpenReportsUnreachableVCenter(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	// A loopback port that was free a moment ago: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	text := strings.Replace(f.configYAML("cold"), f.url.Host, closed, 1)
	c := f.writeConfig(text, simUser, simPassword)
	err = openErr(ctx, t, c)
	if err == nil || !strings.Contains(err.Error(), "vCenter https://"+closed+"/sdk is unreachable") {
		t.Errorf("error %v does not say the vCenter is unreachable", err)
	}
}

func TestOpenRefusesCredentialsInURL(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	text := strings.Replace(f.configYAML("cold"), "https://", "https://root:hunter2@", 1)
	c := f.writeConfig(text, simUser, simPassword)
	err := openErr(ctx, t, c)
	if err == nil || !strings.Contains(err.Error(), "vsphere.url must not carry a user or password") {
		t.Fatalf("error %v does not refuse credentials in vsphere.url", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q shows the password", err)
	}
}

func TestOpenNamesUnknownVM(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	text := strings.Replace(f.configYAML("cold"), `vm: "worker3"`, `vm: "worker-gone"`, 1)
	text = strings.Replace(text, `vm: "/DC0/vm/fleet/cp2"`, `vm: "/DC0/vm/elsewhere/cp2"`, 1)
	c := f.writeConfig(text, simUser, simPassword)
	err := openErr(ctx, t, c)
	if err == nil {
		t.Fatal("Open found VMs that do not exist")
	}
	for _, want := range []string{
		`host worker3: hosts[10].vm "worker-gone": no such VM`,
		`host cp2: hosts[6].vm "/DC0/vm/elsewhere/cp2": no such VM`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestOpenRefusesOneVMForTwoHosts(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	text := strings.Replace(f.configYAML("cold"), `vm: "worker3"`, `vm: "worker2"`, 1)
	c := f.writeConfig(text, simUser, simPassword)
	err := openErr(ctx, t, c)
	if err == nil || !strings.Contains(err.Error(), `host worker3: hosts[10].vm "worker2" is the same VM as host worker2's`) {
		t.Errorf("error %v does not name the shared VM", err)
	}
}

func TestRegisteredOpenerIsTheVSphereLab(t *testing.T) {
	f := newSimFleet(t)
	text := strings.Replace(f.configYAML("cold"), `vm: "worker3"`, `vm: "worker-gone"`, 1)
	c := f.writeConfig(text, simUser, simPassword)
	l, err := lab.Open(c)
	if err == nil || l != nil {
		t.Fatalf("lab.Open = %v, %v; want no lab and the vsphere backend's error", l, err)
	}
	if !strings.Contains(err.Error(), `hosts[10].vm "worker-gone"`) {
		t.Errorf("lab.Open did not reach the vsphere backend: %v", err)
	}
}
