package readers

import (
	"os"
	"path/filepath"
	"testing"
)

// agentsTestdata is a capture of what a node's agents applied
// (testdata/README.md).
func agentsTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
