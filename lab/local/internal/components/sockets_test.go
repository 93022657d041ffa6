package components

import (
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab/local/internal/layout"
)

// Every node lists its containerd's two sockets and its kubelet's; every
// worker of a lab with storage its CSI node and registration sockets for
// both drivers; the storage host its two controller sockets. The
// containerd sockets listed are the ones its config names.
func TestSocketsAreEveryComponentsUnderTheStateDir(t *testing.T) {
	c, hosts := testCluster(t, "lab11s")
	// The default state dir's shape; nothing is made under it.
	c.Dirs = layout.State("/var/lib/faultline/lab11s")
	per := map[string][]Socket{}
	for _, s := range c.Sockets() {
		if !strings.HasPrefix(s.Path, c.Dirs.Dir()+"/") {
			t.Errorf("%s is not under the state dir", s)
		}
		per[s.Host] = append(per[s.Host], s)
	}
	for name, h := range hosts {
		want := 0
		switch {
		case h.HasRole("worker"):
			want = 3 + 4
		case h.HasRole("control-plane"):
			want = 3
		case h.HasRole("storage"):
			want = 2
		}
		if len(per[name]) != want {
			t.Errorf("%s: %d sockets %v, want %d", name, len(per[name]), per[name], want)
		}
		if h.Node == nil {
			continue
		}
		conf := c.containerdConfig(&Env{}, h, "pause")
		for _, s := range per[name] {
			if strings.HasPrefix(s.Service, "containerd") && !strings.Contains(conf, `"`+s.Path+`"`) {
				t.Errorf("%s is not in %s's containerd config:\n%s", s, name, conf)
			}
		}
	}
	if err := c.CheckSocketPaths(); err != nil {
		t.Errorf("a short state dir: %v", err)
	}
	if !slices.ContainsFunc(per["worker1"], func(s Socket) bool {
		return strings.HasSuffix(s.Path, "/plugins_registry/directory.csi.faultline.local.sock")
	}) {
		t.Errorf("worker1's sockets have no registration socket: %v", per["worker1"])
	}
}
