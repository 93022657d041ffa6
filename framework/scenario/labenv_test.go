package scenario

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenLabFromEnvSaysWhatIsWrong(t *testing.T) {
	t.Setenv(EnvLab, "")
	if _, err := OpenLabFromEnv(context.Background()); err == nil || !strings.Contains(err.Error(), "set FAULTLINE_LAB") {
		t.Errorf("unset: %v", err)
	}
	t.Setenv(EnvLab, "no-such-topology")
	if _, err := OpenLabFromEnv(context.Background()); err == nil || !strings.Contains(err.Error(), `unknown lab "no-such-topology"`) {
		t.Errorf("unknown name: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nkind: local\nsurprise: 1\n"), 0o644)
	t.Setenv(EnvLab, bad)
	if _, err := OpenLabFromEnv(context.Background()); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Errorf("malformed file: %v", err)
	}
	// A file of a kind this program links no backend for: the engine
	// links none, and says where they are.
	t.Setenv(EnvLab, "../../testdata/labs/pair.yaml")
	if _, err := OpenLabFromEnv(context.Background()); err == nil || !strings.Contains(err.Error(), `kind: "local" is not a lab kind this program knows: it links no backend (import github.com/faultline/faultline/lab/backends)`) {
		t.Errorf("no backend: %v", err)
	}
}
