package invariants

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/invariant"
)

// A node agent applies what the API records: a node's service
// translation, a client pod's connection to the target. Such a subject is
// judged round by round against each API server's record of it, by name,
// never against "whichever server agrees":
//   - a round in which the servers that answered gave different records
//     (a change landing between their reads, or a server serving an old
//     state) certifies nothing and blames nothing: it is unknown against
//     every server, since there is no one record to judge the subject by;
//   - otherwise, against each server that answered, the round holds when
//     the subject applied that server's record, and is broken when it did
//     not;
//   - a server that gave no record in the round, or a subject that could
//     not be read, leaves the round unknown against that server.
//
// So a stale server answering alone in some rounds vouches only for its
// own record: the rounds in which a fresher server answered are still
// judged against the fresher one, and what falls between them is unknown.
//
// Readable coverage after a change: once a server's record changes (or
// the subject is seen not to apply it), every unknown round against that
// server is suspect until a round shows the subject applying it; a
// stretch of such rounds longer than the bound is INSUFFICIENT_DATA, as
// api-agreement requires of its pairs. Before any change, and once the
// subject is shown to follow, a silent source is no one's suspect.

// recordRound is one round of one subject: what it applied, or why that
// could not be read, and each API server's record of it.
type recordRound struct {
	Taken time.Time
	// Applied is what the subject applied, as comparable text; it is
	// meaningful only when Unread is empty.
	Applied   string
	AppliedAt time.Time
	// Unread says why the round cannot tell what the subject applied.
	Unread  string
	Records map[string]serverRecord
}

// serverRecord is one API server's record of a subject in one round.
type serverRecord struct {
	Value  string
	ReadAt time.Time
}

// subjectMarks are one subject's marks against each server, in round
// order, the servers sorted by name.
type subjectMarks struct {
	Name     string
	Servers  []string
	ByServer map[string][]invariant.Mark
	// Decided is whether some round held or broke against some server.
	Decided bool
	// Changed is whether some server's record of the subject changed.
	Changed bool
}

// differFunc says how the subject's round differs from one server's
// record, "" when it applied it.
type differFunc func(r recordRound, server string, rec serverRecord) string

// againstServers marks a subject's rounds (in round order) against every
// server that recorded it in some round.
func againstServers(name string, rounds []recordRound, differ differFunc) subjectMarks {
	sm := subjectMarks{Name: name, ByServer: map[string][]invariant.Mark{}}
	seen := map[string]bool{}
	for _, r := range rounds {
		for s := range r.Records {
			if !seen[s] {
				seen[s] = true
				sm.Servers = append(sm.Servers, s)
			}
		}
	}
	sort.Strings(sm.Servers)
	for _, s := range sm.Servers {
		pending := false
		var prev string
		havePrev := false
		var marks []invariant.Mark
		for _, r := range rounds {
			rec, ok := r.Records[s]
			if ok {
				if havePrev && prev != rec.Value {
					pending, sm.Changed = true, true
				}
				prev, havePrev = rec.Value, true
			}
			m := invariant.Mark{Taken: r.Taken, ReadAt: r.Taken}
			if r.Unread == "" {
				m.ReadAt = r.AppliedAt
			}
			contested := contestedText(r.Records)
			switch {
			case r.Unread != "":
				m.State, m.Detail = invariant.Unknown, r.Unread
			case !ok:
				m.State, m.Detail = invariant.Unknown, s+" gave no record in this round"
			case contested != "":
				m.State, m.Detail = invariant.Unknown, contested
			default:
				m.ReadAt = laterOf(m.ReadAt, rec.ReadAt)
				if d := differ(r, s, rec); d != "" {
					m.State, m.Detail = invariant.Broken, d
					pending = true
				} else {
					m.State = invariant.Holds
					pending = false
				}
				sm.Decided = true
			}
			if m.State == invariant.Unknown {
				m.Suspect = pending
			}
			marks = append(marks, m)
		}
		sm.ByServer[s] = marks
	}
	return sm
}

// contestedText says how the servers' records of one round differ, ""
// when every server that answered gave the same.
func contestedText(records map[string]serverRecord) string {
	byValue := map[string][]string{}
	for s, r := range records {
		byValue[r.Value] = append(byValue[r.Value], s)
	}
	if len(byValue) < 2 {
		return ""
	}
	var parts []string
	for v, servers := range byValue {
		sort.Strings(servers)
		parts = append(parts, fmt.Sprintf("%s recorded %s", strings.Join(servers, ", "), v))
	}
	sort.Strings(parts)
	return "the API servers disagreed in this round (" + strings.Join(parts, "; ") + "): no one record to judge by"
}

// judgedStretch is a stretch of one subject's marks against one server.
type judgedStretch struct {
	subject, server string
	s               invariant.Stretch
	marks           []invariant.Mark
}

// judgeSubjects applies the persistence rule to every subject against
// every server (missed ticks put in): the first violation in subject and
// server order, the first stretch that could hide one, and the first
// stretch still open when the evidence ends (a change no later round
// showed the subject following).
func judgeSubjects(subjects []subjectMarks, bound time.Duration, missed []invariant.MissedTick) (violated, unsure, uncovered *judgedStretch) {
	for _, sm := range subjects {
		for _, s := range sm.Servers {
			ms := invariant.WithMissed(sm.ByServer[s], missed)
			v, u := invariant.Persisting(ms, bound, false)
			if v != nil && violated == nil {
				violated = &judgedStretch{subject: sm.Name, server: s, s: invariant.Widened(ms, *v), marks: ms}
			}
			if u != nil && unsure == nil {
				unsure = &judgedStretch{subject: sm.Name, server: s, s: *u, marks: ms}
			}
			if o := openAtEnd(ms); o != nil && uncovered == nil {
				uncovered = &judgedStretch{subject: sm.Name, server: s, s: *o, marks: ms}
			}
		}
	}
	return violated, unsure, uncovered
}

// openAtEnd is the stretch of broken or suspect rounds that runs to the
// last of marks (in round order), nil when a round that holds, or one that
// cannot tell and is not suspect, ends every such stretch: the subject was
// still to follow a change when the evidence ended, so whether it did
// within the bound is not known.
func openAtEnd(marks []invariant.Mark) *invariant.Stretch {
	var open *invariant.Stretch
	for _, m := range marks {
		switch {
		case m.State == invariant.Holds:
			open = nil
		case open != nil:
			open.Last = m
			if m.State == invariant.Broken {
				open.Broken++
			}
		case m.State == invariant.Broken || m.Suspect:
			open = &invariant.Stretch{First: m, Last: m}
			if m.State == invariant.Broken {
				open.Broken++
			}
		}
	}
	return open
}

// longestProven is the longest proven-broken stretch of any subject
// against any server, and whose.
func longestProven(subjects []subjectMarks) (time.Duration, string) {
	var longest time.Duration
	var of string
	for _, sm := range subjects {
		for _, s := range sm.Servers {
			for _, st := range stretchesOf(sm.ByServer[s]) {
				if st.Lasted() > longest {
					longest, of = st.Lasted(), sm.Name+" against "+s
				}
			}
		}
	}
	return longest, of
}

// undecided names the subjects no round decided against any server.
func undecided(subjects []subjectMarks) []string {
	var out []string
	for _, sm := range subjects {
		if !sm.Decided {
			out = append(out, sm.Name)
		}
	}
	return out
}

// combinedAt is a subject's state in the round taken at t over all
// servers: broken against one of them, else holding against one, else
// unknown (suspect when it is against some server). A round holds or
// breaks against every server that answered alike, since a round in
// which they differed is unknown against all.
func combinedAt(sm subjectMarks, t time.Time) (invariant.Mark, bool) {
	var out invariant.Mark
	found := false
	for _, s := range sm.Servers {
		for _, m := range sm.ByServer[s] {
			if !m.Taken.Equal(t) {
				continue
			}
			switch {
			case !found:
				out, found = m, true
			case m.State == invariant.Broken:
				if out.State != invariant.Broken {
					out = m
				}
			case m.State == invariant.Holds:
				if out.State == invariant.Unknown {
					out = m
				}
			case m.State == invariant.Unknown && out.State == invariant.Unknown:
				out.Suspect = out.Suspect || m.Suspect
			}
		}
	}
	return out, found
}

// laterOf is the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
