package drill

import (
	"github.com/faultline/faultline/framework/verdict"
)

func writeRacks(dir, path string, runs []verdict.Run) error {
	return nil
}
