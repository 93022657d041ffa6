package ssh

import (
	"os"
	"path/filepath"
	"strings"
)

// ExpandHome turns a leading "~/" into the user's home directory, as lab
// files name keys and known_hosts the way ssh_config does.
func ExpandHome(path string) string {
	rest, ok := strings.CutPrefix(path, "~/")
	if !ok {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, rest)
}
