package report

import "github.com/faultline/faultline/reports/suitereports"

// The drills' reports are linked into `faultline report` by a blank import.
func init() {
	suitereports.Register(suitereports.Report{
		Name:        "drill",
		FolderPages: FolderPages,
		WriteFolder: WriteFolder,
		NoRuns:      ErrNoDrillRuns,
	})
}
