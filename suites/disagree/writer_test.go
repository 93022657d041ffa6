package disagree

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
)

func TestWriterAPIServerFollowsTheLabel(t *testing.T) {
	l, err := lab.OpenFile(filepath.Join("..", "..", "testdata", "labs", "lab11.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := l.Config()
	cp3, _ := c.HostConfig("cp3")
	port := strconv.Itoa(c.Network.APIServerPort)
	if c.Network.VirtualIP == "" || cp3.Address == "" {
		t.Fatal("lab11 names no virtual address or no cp3")
	}
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{[]string{"ci", "topology:lab11"}, c.Network.VirtualIP + ":" + port},
		{[]string{"writer:cp3", "control:acknowledged-writes-survive"}, cp3.Address + ":" + port},
	} {
		got, err := WriterAPIServer(tc.labels, l)
		if err != nil || got != tc.want {
			t.Errorf("WriterAPIServer(%v) = %q, %v; want %q", tc.labels, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"writer:worker1"}, {"writer:nosuch"}, {"writer:cp1", "writer:cp2"}} {
		if got, err := WriterAPIServer(bad, l); err == nil {
			t.Errorf("WriterAPIServer(%v) = %q, want an error", bad, got)
		}
	}
}
