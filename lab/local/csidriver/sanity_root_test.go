//go:build root

package csidriver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/lab/local/csidriver/internal/roottest"
)

// TestSanity runs kubernetes-csi's csi-sanity, the CSI spec's conformance
// suite, against both drivers: every service on one socket, volumes,
// loop devices and mounts in the test's own directory.
func TestSanity(t *testing.T) {
	dir := roottest.Dir(t)
	for _, k := range Kinds {
		l := &lab{dir: filepath.Join(dir, string(k))}
		l.store = Store{Root: l.path("export")}
		must(t, os.MkdirAll(l.store.Root, 0o755))
		c, err := NewController(k, l.store, ControllerOptions{})
		must(t, err)
		n, err := NewNode(k, l.store, "sanity-node", NodeOptions{})
		must(t, err)
		sock := l.path("csi.sock")
		lis, err := Listen(sock)
		must(t, err)
		srv := NewServer(quiet, string(k))
		csi.RegisterIdentityServer(srv, NewIdentity(k, l.store, true))
		csi.RegisterControllerServer(srv, c)
		csi.RegisterNodeServer(srv, n)
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)

		cfg := sanity.NewTestConfig()
		cfg.Address = "unix://" + sock
		cfg.TargetPath = l.path("target")
		cfg.StagingPath = l.path("staging")
		cfg.TestVolumeSize = 32 * mib
		cfg.IdempotentCount = 2
		cfg.TestVolumeAccessType = "mount"
		sanity.GinkgoTest(&cfg)
	}
	RegisterFailHandler(Fail)
	suite, reporter := GinkgoConfiguration()
	suite.Timeout = 0
	reporter.NoColor = true
	if !RunSpecs(t, "csi-sanity", suite, reporter) {
		return
	}
}
