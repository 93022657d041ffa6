package record

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/faultline/faultline/lab"
)

// GitCommit is the commit of the working tree the suite runs from, with
// "+dirty" when it has uncommitted changes, or "unknown" without git.
func GitCommit(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if commit == "" {
		return "unknown"
	}
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		commit += "+dirty"
	}
	return commit
}

// ConfigHash is "sha256:<hex>" of the lab file a config was read from; a
// config not read from a file is hashed as its JSON form, and says so.
func ConfigHash(c *lab.Config) (string, error) {
	if c == nil {
		return "", fmt.Errorf("hashing the lab config: no config")
	}
	if p := c.Path(); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("hashing the lab file: %w", err)
		}
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:]), nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("hashing the lab config: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256-json:" + hex.EncodeToString(sum[:]), nil
}
