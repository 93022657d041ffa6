package invariants

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// StorageIntegrityName names the storage-integrity invariant.
const StorageIntegrityName = "storage-integrity"

// volumeSource answers questions about a volume's backing store (the
// storage host, where the block volumes' image files live).
const volumeSource evidence.Source = "volume"

// Violations of storage-integrity.
const (
	// FilesystemDamaged: e2fsck found errors in the block volume's file
	// system, or no file system it can read.
	FilesystemDamaged = "filesystem-damaged"
	// DatabaseDamaged: the kvdb database does not open, or bbolt's own
	// check found problems.
	DatabaseDamaged = "database-damaged"
	// LedgerDamaged: the ledger's log holds bytes that are no whole
	// record (other than a torn last append), or its sequence breaks.
	LedgerDamaged = "ledger-damaged"
)

// StorageIntegrity: once nothing mounts the volume, what is stored on it
// checks clean by its own rules: the file system (e2fsck -fn on a block
// volume's image file, checker.FilesystemCommand), the embedded database
// (bbolt's Tx.Check on a read-only copy, checker.CheckDatabaseIntegrity)
// and the ledger's log (its checksums and sequence,
// checker.CheckLedgerIntegrity).
//
// Reads, in the input's last snapshot: volume/fsck from "volume" (e2fsck's
// exit status and output, run where the image lives), kvdb/db from "kvdb"
// and ledger/log from "ledger". Each part a scenario asks is judged; a
// part not asked (a shared directory has no image of its own, a scenario
// runs one workload) is left out and named; none asked is
// INSUFFICIENT_DATA.
//
// Fires when any part asked is damaged, with the first of
// "filesystem-damaged", "database-damaged", "ledger-damaged" in that order
// (the reason names every damaged part).
//
// Never judged alone: every one of these checks passes after silent loss.
// e2fsck checks metadata, not what files hold; two copies taking turns on
// a bbolt file by its lock leave perfect pages; two copies appending
// records of one length from one offset leave a log whose checksums and
// sequence are perfect. Loss of acknowledged data is
// acknowledged-data-survives' to find (the same evidence against the
// writers' histories); a scenario that judges this judges that too.
//
// INSUFFICIENT_DATA while any mount of the volume remains (a value's
// Mounted names where it was mounted when read: a file system checked or a
// file read under a live mount proves nothing, another node's page cache
// may still reach the disk); when a part asked is unreadable or
// malformed; when e2fsck could not check the image (an operational error
// other than a bad superblock, a usage error, a cancellation); when e2fsck
// reports errors with the journal not replayed (an unclean unmount: what
// it reports may be what the journal would repair). A journal that holds
// data under a clear needs_recovery flag (two mounts' superblocks over
// one image leave that) is no such journal: the kernel's next mount wipes
// it rather than replay it, so the errors e2fsck finds then are what that
// mount finds, and VIOLATED.
//
// Why: a volume two copies wrote through, each with its own page cache
// or its own idea of the file, can be left with metadata or pages no
// writer wrote as they are: what ReadWriteOnce and StatefulSet's
// at-most-one exist to prevent.
//
// Exercised when every part judged was read after the heal (so the
// stored state carried whatever the fault did to it). VIOLATED is always
// exercised.
func StorageIntegrity() invariant.Invariant { return storageIntegrity{} }

type storageIntegrity struct{}

func (storageIntegrity) Name() string         { return StorageIntegrityName }
func (storageIntegrity) Phase() verdict.Phase { return verdict.Convergence }
func (storageIntegrity) Reads() []invariant.Reading {
	return []invariant.Reading{
		{Sources: string(volumeSource), Question: storeddata.VolumeFilesystem},
		{Sources: string(kvdbSource), Question: storeddata.KVDBDatabase},
		{Sources: string(ledgerSource), Question: storeddata.LedgerLog},
	}
}

// storagePart is one part's check.
type storagePart struct {
	source    evidence.Source
	what      string
	readAt    time.Time
	mounted   []string
	violation string // "" when clean
	finding   string
	undecided string // why the part cannot decide
}

func (storageIntegrity) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	if len(snaps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot to judge"}
	}
	last := snaps[len(snaps)-1]
	var parts []storagePart
	var notAsked []string
	ask := func(src evidence.Source, q evidence.Question, v any, check func(evidence.Answer) storagePart) {
		a := last.Get(src, q)
		if a.State == evidence.NotAsked {
			notAsked = append(notAsked, fmt.Sprintf("%s of %s", q, src))
			return
		}
		if _, why := sourceAnswer(last, src, q, v); why != "" {
			parts = append(parts, storagePart{source: src, what: string(q), undecided: why})
			return
		}
		p := check(a)
		p.source, p.readAt = src, a.ReadAt
		parts = append(parts, p)
	}

	var fsV storeddata.VolumeFilesystemValue
	ask(volumeSource, storeddata.VolumeFilesystem, &fsV, func(evidence.Answer) storagePart {
		r := checker.ParseFilesystemCheck(fsV.Image, fsV.ExitCode, fsV.Output)
		p := storagePart{what: "the file system of " + orNone(fsV.Image), mounted: fsV.Mounted, finding: r.String()}
		switch {
		case r.Unchecked:
			p.undecided = r.String()
		case r.Damaged && r.NeedsRecovery:
			p.undecided = r.String() + " (the journal was not replayed, so its errors may be what the journal would repair)"
		case r.Damaged:
			p.violation = FilesystemDamaged
		}
		return p
	})
	var dbV storeddata.KVDBDatabaseValue
	ask(kvdbSource, storeddata.KVDBDatabase, &dbV, func(evidence.Answer) storagePart {
		r := checker.CheckDatabaseIntegrity(dbV.Data)
		p := storagePart{what: "the kvdb database at " + orNone(dbV.Path), mounted: dbV.Mounted, finding: r.String()}
		if !r.Clean() {
			p.violation = DatabaseDamaged
		}
		return p
	})
	var logV storeddata.LedgerLogValue
	ask(ledgerSource, storeddata.LedgerLog, &logV, func(evidence.Answer) storagePart {
		r := checker.CheckLedgerIntegrity(logV.Data)
		p := storagePart{what: "the ledger's log at " + orNone(logV.Path), mounted: logV.Mounted, finding: r.String()}
		if !r.Clean() {
			p.violation = LedgerDamaged
		}
		return p
	})

	left := ""
	if len(notAsked) > 0 {
		left = "; not asked, so not judged: " + strings.Join(notAsked, ", ")
	}
	if len(parts) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no part of the stored state was asked (volume/fsck, kvdb/db, ledger/log)"}
	}
	var src []string
	var mounted, undecided, damaged, clean []string
	for _, p := range parts {
		src = append(src, string(p.source))
		switch {
		case p.undecided != "":
			undecided = append(undecided, p.what+": "+p.undecided)
		case len(p.mounted) > 0:
			mounted = append(mounted, fmt.Sprintf("%s was read at %s with the volume mounted on %s", p.what, invariant.Stamp(p.readAt), strings.Join(p.mounted, ", ")))
		case p.violation != "":
			damaged = append(damaged, p.what+": "+p.finding)
		default:
			clean = append(clean, p.what+": "+p.finding)
		}
	}
	if len(mounted) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: "a mount of the volume remains: " + strings.Join(mounted, "; ") + ": a check under a live mount proves nothing" + left}
	}
	if len(undecided) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src, Reason: "cannot decide: " + strings.Join(undecided, "; ") + left}
	}
	exercised, exercise := readAfterHeal(parts, in.Timeline)
	if len(damaged) > 0 {
		violation, at := "", time.Time{}
		for _, p := range parts { // in the order fsck, database, ledger
			if p.violation != "" {
				violation, at = p.violation, p.readAt
				break
			}
		}
		also := ""
		if len(clean) > 0 {
			also = "; clean: " + strings.Join(clean, "; ")
		}
		return verdict.Judgement{Verdict: verdict.Violated, Violation: violation, Sources: src, At: at,
			Reason:    "damaged after the volume was let go: " + strings.Join(damaged, "; ") + also + left,
			Exercised: verdict.Exercised(), Exercise: exercise}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    "with nothing mounting the volume, every part checks clean: " + strings.Join(clean, "; ") + left + "; this says nothing of lost data (acknowledged-data-survives judges that)",
		Exercised: &exercised, Exercise: exercise}
}

// readAfterHeal is storage-integrity's exercise rule: every part judged
// was read after the heal.
func readAfterHeal(parts []storagePart, tl evidence.Timeline) (bool, string) {
	e := tl.OfKind(invariant.FaultHealedEvent)
	if len(e) == 0 {
		return false, "no heal on the timeline: the stored state carried no fault"
	}
	healed := e[len(e)-1].At
	for _, p := range parts {
		if !p.readAt.After(healed) {
			return false, fmt.Sprintf("%s was read at %s, not after the heal at %s", p.what, invariant.Stamp(p.readAt), invariant.Stamp(healed))
		}
	}
	return true, fmt.Sprintf("%d part(s) of the stored state read after the heal at %s", len(parts), invariant.Stamp(healed))
}

// orNone is s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
