// Package gobuild compiles the project's own programs from its source tree:
// the fixture images' programs and the local lab's CSI driver are built
// from the checkout a lab is brought up from, so what runs is the code
// under test, never a stale copy.
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModulePath is the project's Go module.
const ModulePath = "github.com/faultline/faultline"

// FindModule walks up from the current directory to the project's go.mod
// and returns its directory.
func FindModule() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePathOf(data) == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s in the current directory or its parents (run from the faultline source tree)", ModulePath)
		}
		dir = parent
	}
}

func modulePathOf(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Static builds the package at rel (a path inside the module, such as
// "cmd/faultline-csi") as a static Linux binary for arch at out. The
// binary is written beside out and renamed into place, so a lab brought
// up meanwhile never runs half a file.
func Static(ctx context.Context, moduleDir, arch, rel, out string) error {
	pkg := ModulePath + "/" + strings.TrimPrefix(rel, "/")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if output, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compiling %s: %w\n%s", pkg, err, output)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
