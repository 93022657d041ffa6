package mounts

import "testing"

func TestUnescapeMountinfo(t *testing.T) {
	if got := unescape(`/var/lib/a\040b\134c`); got != `/var/lib/a b\c` {
		t.Errorf("got %q", got)
	}
}
