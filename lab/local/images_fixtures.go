package local

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/lab/local/binpaths"
)

// images builds the fixture images (once per Lab value) into the cache
// next to the binaries.
func (l *Lab) images() (imageSet, error) {
	l.imagesOnce.Do(func() {
		dir := filepath.Join(binpaths.CacheDir(), "images", images.Version)
		built, err := images.Build(context.Background(), dir)
		if err != nil {
			l.imagesErr = fmt.Errorf("fixture images: %w", err)
			return
		}
		set := imageSet{pause: images.SandboxImage}
		for _, im := range built {
			set.tarballs = append(set.tarballs, im.Tarball)
			set.refs = append(set.refs, im.Tags...)
		}
		l.imageSet = set
	})
	return l.imageSet, l.imagesErr
}
