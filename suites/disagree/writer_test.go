package disagree

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
)

func TestWriterAPIServerFollowsTheScenario(t *testing.T) {
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
	for writer, want := range map[string]string{"": c.Network.VirtualIP + ":" + port, "cp3": cp3.Address + ":" + port} {
		got, err := WriterAPIServer(writer, l)
		if err != nil || got != want {
			t.Errorf("WriterAPIServer(%q) = %q, %v; want %q", writer, got, err, want)
		}
	}
	for _, bad := range []string{"worker1", "nosuch"} {
		if got, err := WriterAPIServer(bad, l); err == nil {
			t.Errorf("WriterAPIServer(%q) = %q, want an error", bad, got)
		}
	}
}
