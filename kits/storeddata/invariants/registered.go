package invariants

import "github.com/faultline/faultline/framework/invariant"

// The stored data's invariants, registered by name with the core's
// registry (invariant.Register), so that a record of them is judged again
// wherever this package is linked (cmd/faultline links it with a blank
// import). None takes parameters.
func init() {
	for name, build := range map[string]func() invariant.Invariant{
		AcknowledgedDataSurvivesName: AcknowledgedDataSurvives,
		StorageIntegrityName:         StorageIntegrity,
		SingleWriterAtStorageName:    SingleWriterAtStorage,
		SingleHistoryName:            SingleHistory,
		FencingMonotonicName:         FencingMonotonic,
	} {
		invariant.Register(name, invariant.Plain(build))
	}
}
