//go:build lab

package e2eframework

import (
	"context"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	// The node images every local lab loads: a program that brings a
	// local lab up provides them.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/lab/local/e2eprovider"
)

// clusterName is the key under which envfuncs keeps the provider in the
// tests' context.
const clusterName = "faultline-local"

var testenv env.Environment

// labArg is the lab the tests bring up: $FAULTLINE_E2E_LAB (a lab file,
// or a topology name in testdata/labs), else the two-host pair. It is not
// $FAULTLINE_LAB, which names the lab the suites run on, already up.
func labArg() string {
	if l := os.Getenv("FAULTLINE_E2E_LAB"); l != "" {
		return l
	}
	return "pair"
}

func TestMain(m *testing.M) {
	testenv = env.New()
	testenv.Setup(envfuncs.CreateClusterWithOpts(e2eprovider.New(), clusterName,
		e2eprovider.WithLab(labArg()), e2eprovider.WithProgress(os.Stderr)))
	if dir := os.Getenv("FAULTLINE_E2E_LOGS"); dir != "" {
		testenv.Finish(envfuncs.ExportClusterLogs(clusterName, dir))
	}
	testenv.Finish(envfuncs.DestroyCluster(clusterName))
	os.Exit(testenv.Run(m))
}

// provider is the local lab provider CreateClusterWithOpts stored.
func provider(ctx context.Context, t *testing.T) *e2eprovider.Provider {
	t.Helper()
	c, ok := envfuncs.GetClusterFromContext(ctx, clusterName)
	if !ok {
		t.Fatalf("no cluster %q in the context: did Create fail?", clusterName)
	}
	p, ok := c.(*e2eprovider.Provider)
	if !ok {
		t.Fatalf("cluster %q is a %T, not the local lab provider", clusterName, c)
	}
	return p
}
