package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveConfigPathLooksInParentDirectories(t *testing.T) {
	root := t.TempDir()
	labs := filepath.Join(root, "testdata", "labs")
	sub := filepath.Join(root, "suites", "disagree")
	for _, d := range []string{labs, sub, filepath.Join(root, "adir.yaml")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(labs, "lab11.yaml")
	if err := os.WriteFile(file, []byte("name: lab11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	for _, arg := range []string{"lab11", "testdata/labs/lab11.yaml", file} {
		got, err := ResolveConfigPath(arg)
		if err != nil || got != file {
			t.Errorf("ResolveConfigPath(%q) = %q, %v; want %q", arg, got, err, file)
		}
	}
	for arg, want := range map[string]string{
		"":                               "no lab given",
		"lab12":                          `unknown lab "lab12"`,
		"testdata/labs/nope.yaml":        "under a parent directory",
		"adir.yaml":                      "does not exist",
		filepath.Join(root, "nope.yaml"): "does not exist",
	} {
		if got, err := ResolveConfigPath(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ResolveConfigPath(%q) = %q, %v; want an error containing %q", arg, got, err, want)
		}
	}
}
