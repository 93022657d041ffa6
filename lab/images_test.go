package lab

import (
	"context"
	"errors"
	"testing"
)

func TestNodeImagesComeFromTheProvidedSource(t *testing.T) {
	defer func(prev NodeImageSource) { nodeImagesSrc = prev }(nodeImagesSrc)
	nodeImagesSrc = nil
	if _, err := BuildNodeImages(context.Background(), t.TempDir()); !errors.Is(err, ErrNoNodeImages) {
		t.Fatalf("no source: %v, want ErrNoNodeImages", err)
	}
	var asked string
	ProvideNodeImages(func(_ context.Context, dir string) (NodeImages, error) {
		asked = dir
		return NodeImages{Sandbox: "pause:1", Tarballs: []string{dir + "/a.tar"}, Refs: []string{"a:1"}}, nil
	})
	dir := t.TempDir()
	got, err := BuildNodeImages(context.Background(), dir)
	if err != nil || asked != dir || got.Sandbox != "pause:1" || len(got.Tarballs) != 1 || got.Refs[0] != "a:1" {
		t.Errorf("BuildNodeImages = %+v, %v (source asked for %q)", got, err, asked)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second source was accepted")
		}
	}()
	ProvideNodeImages(func(context.Context, string) (NodeImages, error) { return NodeImages{}, nil })
}
