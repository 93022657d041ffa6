package evidence

import (
	"context"

	"github.com/faultline/faultline/lab"
)

// Sampler takes snapshots of a lab. A source that cannot answer is an
// Unreadable answer in the snapshot, not an error: an error means no
// snapshot could be taken at all.
type Sampler interface {
	// Sample asks every source every question once. The events are the
	// moments the sampler saw since its previous call (it may see none).
	Sample(ctx context.Context, l lab.Lab) (Snapshot, []Event, error)
}
