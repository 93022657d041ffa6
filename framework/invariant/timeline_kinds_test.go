package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/evidence/watch"
)

// The exercise rules read the timeline by event kind; the kinds must be
// the ones the timeline recorder writes.
func TestTimelineKindsAreTheRecorders(t *testing.T) {
	for mine, recorder := range map[string]string{
		podCreatedEvent: watch.KindPodCreated, podScheduledEvent: watch.KindPodScheduled,
		podDeletionEvent: watch.KindPodDeletion, podDeletedEvent: watch.KindPodDeleted,
		leaderChangedEvent: watch.KindLeaderChanged, readyUnknownEvent: watch.KindReadyUnknown,
		readyFalseEvent: watch.KindReadyFalse, taintAddedEvent: watch.KindTaintAdded,
		endpointsChangedEvent: watch.KindEndpoints,
	} {
		if mine != recorder {
			t.Errorf("kind %q, the recorder writes %q", mine, recorder)
		}
	}
}
