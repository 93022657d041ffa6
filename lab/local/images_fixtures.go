package local

import "fmt"

// images returns the fixture images. They come from the project's
// fixture image builder.
func (l *Lab) images() (imageSet, error) {
	return imageSet{}, fmt.Errorf("fixture images: not available in this build")
}
