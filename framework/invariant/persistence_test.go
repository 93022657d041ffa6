package invariant

import (
	"testing"
	"time"
)

// marksAt builds one mark per round, a second apart from t0, each read
// 0.1 s into its round, in the states given.
func marksAt(states ...Condition) []Mark {
	var out []Mark
	for i, s := range states {
		taken := sec(float64(i))
		out = append(out, Mark{Taken: taken, ReadAt: taken.Add(100 * time.Millisecond), State: s})
	}
	return out
}

func TestPersistingABrokenRoundOpensAStretchThatUnknownRoundsExtend(t *testing.T) {
	// Broken twice, then nothing known for six seconds: the difference
	// may have gone on all that time, so it is no proof of agreement.
	marks := marksAt(Broken, Broken, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown)
	violated, unsure := Persisting(marks, 5*time.Second, false)
	if violated != nil {
		t.Errorf("two broken rounds 0.9 s apart proved a stretch past 5s: %+v", violated)
	}
	if unsure == nil {
		t.Fatal("a broken round followed by unknown rounds past the bound is not unsure")
	}
	if !unsure.First.Taken.Equal(sec(0)) || unsure.Broken != 2 {
		t.Errorf("unsure stretch from %s with %d broken rounds, want from the first broken round with 2", Stamp(unsure.First.Taken), unsure.Broken)
	}

	// Without a broken round, a silent source stays no one's suspect.
	if _, unsure := Persisting(marksAt(Holds, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown), 5*time.Second, false); unsure != nil {
		t.Errorf("unknown rounds alone opened a stretch with suspectUnknown false: %+v", unsure)
	}
	// A round that holds closes the stretch.
	if _, unsure := Persisting(marksAt(Broken, Unknown, Unknown, Holds, Unknown, Unknown, Unknown, Unknown, Unknown), 5*time.Second, false); unsure != nil {
		t.Errorf("a stretch went on past a round that holds: %+v", unsure)
	}
}

// What endpoints-truthful relies on, suspectUnknown true, is unchanged.
func TestPersistingWithUnknownRoundsSuspectOnTheirOwn(t *testing.T) {
	for _, c := range []struct {
		name                    string
		marks                   []Mark
		violated, unsure        bool
		unsureFirst, unsureLast float64
	}{
		{"all holds", marksAt(Holds, Holds, Holds, Holds, Holds, Holds, Holds), false, false, 0, 0},
		{"unknown alone past the bound", marksAt(Holds, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown, Unknown), false, true, 1, 7},
		{"broken past the bound", marksAt(Broken, Broken, Broken, Broken, Broken, Broken, Broken), true, true, 0, 6},
		{"broken then unknown", marksAt(Broken, Broken, Unknown, Unknown, Unknown, Unknown, Unknown), false, true, 0, 6},
		{"broken, unknown, broken", marksAt(Broken, Unknown, Unknown, Broken, Unknown, Unknown, Broken), false, true, 0, 6},
		{"cut by a round that holds", marksAt(Unknown, Unknown, Unknown, Holds, Unknown, Unknown, Unknown), false, false, 0, 0},
	} {
		v, u := Persisting(c.marks, 5*time.Second, true)
		if (v != nil) != c.violated || (u != nil) != c.unsure {
			t.Errorf("%s: violated %v unsure %v, want %v %v", c.name, v != nil, u != nil, c.violated, c.unsure)
			continue
		}
		if u != nil && (!u.First.Taken.Equal(sec(c.unsureFirst)) || !u.Last.Taken.Equal(sec(c.unsureLast))) {
			t.Errorf("%s: unsure from %s to %s, want %gs to %gs", c.name, Stamp(u.First.Taken), Stamp(u.Last.Taken), c.unsureFirst, c.unsureLast)
		}
	}
}

func TestWithMissedPutsAnUnknownRoundAtEachMissedTickBetweenRounds(t *testing.T) {
	marks := marksAt(Broken, Broken, Broken, Broken)
	got := WithMissed(marks, []MissedTick{{At: sec(-1), Why: "before"}, {At: sec(1.5), Why: "between"}, {At: sec(9), Why: "after"}})
	if len(got) != 5 || got[2].State != Unknown || !got[2].Taken.Equal(sec(1.5)) || !got[2].Suspect {
		t.Fatalf("want one suspect unknown round at 1.5 s between the broken ones, got %+v", got)
	}
	// After a round that holds, a missed tick could hide nothing new on
	// its own.
	got = WithMissed(marksAt(Holds, Holds), []MissedTick{{At: sec(0.5), Why: "between"}})
	if len(got) != 3 || got[1].State != Unknown || got[1].Suspect {
		t.Fatalf("want one unknown round, not suspect, at 0.5 s, got %+v", got)
	}
	if _, unsure := Persisting(got, 5*time.Second, false); unsure != nil {
		t.Errorf("a missed tick between rounds that hold opened a stretch: %+v", unsure)
	}
}
