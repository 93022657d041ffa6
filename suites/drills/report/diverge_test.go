package report

import (
	"testing"
	"time"
)

func arm(moments ...Moment) PairArm { return PairArm{Moments: moments} }

func at(key string, s float64) Moment {
	d := time.Duration(s * float64(time.Second))
	return Moment{Key: key, Label: key, Seen: true, Offset: d, Since: d, Anchor: "fault"}
}

func unseen(key string) Moment { return Moment{Key: key, Label: key} }

func TestDiverge(t *testing.T) {
	for _, c := range []struct {
		name     string
		c, e     PairArm
		want     string
		diverges bool
	}{
		{"same moments within the tolerance", arm(at("unknown", 11), at("taint", 12)), arm(at("unknown", 12.5), at("taint", 13)), "", false},
		{"a moment only the control shows", arm(at("unknown", 11), at("ready", 80)), arm(at("unknown", 11), unseen("ready")), "ready", true},
		{"a moment only the experiment shows", arm(at("unknown", 11), unseen("gone")), arm(at("unknown", 11), at("gone", 50)), "gone", true},
		{"the first of two differences in time order", arm(at("a", 10), at("b", 20), at("c", 30)), arm(at("a", 10), at("b", 25), unseen("c")), "b", true},
		{"a difference just over the tolerance", arm(at("a", 10)), arm(at("a", 12.01)), "a", true},
		{"anchors that differ are compared from the fault", arm(at("a", 10)), arm(Moment{Key: "a", Seen: true, Offset: 11 * time.Second, Since: 3 * time.Second, Anchor: "last lease renewal"}), "", false},
		{"a moment neither shows is no divergence", arm(unseen("x"), at("a", 1)), arm(unseen("x"), at("a", 1)), "", false},
	} {
		d, ok := Diverge(c.c, c.e)
		if ok != c.diverges || d.Key != c.want {
			t.Errorf("%s: got %q (diverges %v), want %q (%v)", c.name, d.Key, ok, c.want, c.diverges)
		}
	}
}
