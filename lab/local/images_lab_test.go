//go:build lab

package local

// The lab tests bring labs up, which load the fixture images into their
// nodes; the program provides them, as cmd/faultline does.
import _ "github.com/faultline/faultline/fixtures/images"
