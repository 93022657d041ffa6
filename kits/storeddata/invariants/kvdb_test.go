package invariants

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/history/historytest"
	"github.com/faultline/faultline/fixtures/kvdb"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// The kvdb cases are judged over databases and histories the workload's
// own code wrote (kvdb's naive client on a bbolt file, recording into a
// store in memory), every writer on one clock that starts at t0 and moves
// a millisecond a reading.

const kvdbPrefix = "/faultline/kvdb/invariant/"

type kvdbBench struct {
	t     *testing.T
	path  string
	store *ledgerStore
	now   time.Time
}

func newKVDBBench(t *testing.T) *kvdbBench {
	return &kvdbBench{t: t, path: filepath.Join(t.TempDir(), "kv.db"), store: &ledgerStore{historytest.NewStore()}, now: t0}
}

func (b *kvdbBench) clock() time.Time { b.now = b.now.Add(time.Millisecond); return b.now }

func (b *kvdbBench) start(id history.Identity) *kvdb.Client {
	return b.startOnClock(id, b.clock)
}

// startSkewed starts a writer whose host's clock is off by skew.
func (b *kvdbBench) startSkewed(id history.Identity, skew time.Duration) *kvdb.Client {
	return b.startOnClock(id, func() time.Time { return b.clock().Add(skew) })
}

func (b *kvdbBench) startOnClock(id history.Identity, now func() time.Time) *kvdb.Client {
	b.t.Helper()
	db, err := kvdb.OpenDB(b.path, kvdb.DBOptions{NoSync: true})
	if err != nil {
		b.t.Fatal(err)
	}
	c, err := kvdb.NewClient(db, id, b.store, kvdb.ClientOptions{Prefix: kvdbPrefix, Keys: kvdb.Keys(2, 1), Now: now})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := c.RecordStart(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	return c
}

func kvdbOps(t *testing.T, c *kvdb.Client, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := c.Do(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func (b *kvdbBench) dbValue(mounted ...string) storeddata.KVDBDatabaseValue {
	b.t.Helper()
	data, err := os.ReadFile(b.path)
	if err != nil {
		b.t.Fatal(err)
	}
	return storeddata.KVDBDatabaseValue{Path: "/srv/volumes/kvdb-0/kv.db", Data: data, Mounted: mounted}
}

func (b *kvdbBench) historyValue() storeddata.LedgerHistoryValue {
	return storeddata.LedgerHistoryValue{Prefix: kvdbPrefix, Revision: b.store.Revision(), KVs: b.store.stored()}
}

// kvdbAnswers records the database read over [at, at+0.1 s] and the
// history over [at+0.2 s, at+0.3 s] in the round taken at second at.
func kvdbAnswers(t *testing.T, s *evidence.Snapshot, at float64, db storeddata.KVDBDatabaseValue, hist storeddata.LedgerHistoryValue) {
	t.Helper()
	for _, a := range []struct {
		q        evidence.Question
		v        any
		from, to float64
	}{{storeddata.KVDBDatabase, db, 0, 0.1}, {storeddata.KVDBHistory, hist, 0.2, 0.3}} {
		ans, err := evidence.ValueAnswer(a.v, sec(at+a.to), "")
		if err != nil {
			t.Fatal(err)
		}
		ans.AskedAt = sec(at + a.from)
		s.Set(kvdbSource, a.q, ans)
	}
}

func finalKVDB(t *testing.T, b *kvdbBench, mounted ...string) invariant.Input {
	r := newRun(t)
	rd := r.Round(20)
	kvdbAnswers(t, rd.Snapshot(), 20, b.dbValue(mounted...), b.historyValue())
	in := r.Input(invariant.Final)
	in.Timeline = healed()
	return in
}

func TestAcknowledgedDataSurvivesKVDBPreservedWhenOneWriterFollowsAnother(t *testing.T) {
	b := newKVDBBench(t)
	kvdbOps(t, b.start(ledgerID("a", "worker1")), 6)
	kvdbOps(t, b.start(ledgerID("b", "worker2")), 6)
	j := expect(t, AcknowledgedDataSurvives(), finalKVDB(t, b), verdict.Preserved,
		"every acknowledged operation's effect is in the kvdb database", "12 ok", "counter/0 4 after 4")
	wantExercised(t, j, true, "12 acknowledged operation(s) from before the heal", "2 writer(s)")
	if len(j.Sources) != 1 || j.Sources[0] != "kvdb" {
		t.Errorf("sources %v", j.Sources)
	}
}

func TestAcknowledgedDataSurvivesKVDBViolatedWhenTwoCopiesLoseUpdates(t *testing.T) {
	// The positive control: a second copy starts on the database while
	// the first runs on, each incrementing what it believes.
	b := newKVDBBench(t)
	a := b.start(ledgerID("a", "worker1"))
	kvdbOps(t, a, 3)
	c := b.start(ledgerID("c", "worker2"))
	for i := 0; i < 3; i++ {
		kvdbOps(t, a, 3)
		kvdbOps(t, c, 3)
	}
	j := expect(t, AcknowledgedDataSurvives(), finalKVDB(t, b), verdict.Violated, "lost update", "acknowledged operation(s) missing", "does not count it")
	if j.Violation != LostUpdate || !j.At.Equal(sec(20.1)) {
		t.Errorf("violation %q at %s", j.Violation, invariant.Stamp(j.At))
	}
	wantExercised(t, j, true)
}

func TestAcknowledgedDataSurvivesKVDBViolatedByValuesNobodyWrote(t *testing.T) {
	b := newKVDBBench(t)
	kvdbOps(t, b.start(ledgerID("a", "worker1")), 3)
	other := newKVDBBench(t)
	other.path = b.path
	kvdbOps(t, other.start(ledgerID("x", "worker3")), 3)
	j := expect(t, AcknowledgedDataSurvives(), finalKVDB(t, b), verdict.Violated, "unwritten data", "no history has operation")
	if j.Violation != UnwrittenData {
		t.Errorf("violation %q", j.Violation)
	}
}

func TestAcknowledgedDataSurvivesKVDBInsufficientWhileMountedWithTheHistoryReadFirst(t *testing.T) {
	b := newKVDBBench(t)
	kvdbOps(t, b.start(ledgerID("a", "worker1")), 3)
	in := finalKVDB(t, b, "worker1")
	s := &in.Snapshots[len(in.Snapshots)-1]
	h := s.Get(kvdbSource, storeddata.KVDBHistory)
	h.AskedAt = sec(19.9)
	s.Set(kvdbSource, storeddata.KVDBHistory, h)
	expect(t, AcknowledgedDataSurvives(), in, verdict.InsufficientData, "mounted on worker1", "not read after the database")
	// Read after it, only what was acknowledged before the read began
	// has to be there.
	j := expect(t, AcknowledgedDataSurvives(), finalKVDB(t, b, "worker1"), verdict.Preserved, "still mounted on worker1")
	wantExercised(t, j, true)
}

func TestAcknowledgedDataSurvivesKVDBInsufficientOnADatabaseThatDoesNotOpen(t *testing.T) {
	b := newKVDBBench(t)
	kvdbOps(t, b.start(ledgerID("a", "worker1")), 3)
	in := finalKVDB(t, b)
	s := &in.Snapshots[0]
	v := b.dbValue()
	v.Data = make([]byte, len(v.Data))
	ans, _ := evidence.ValueAnswer(v, sec(20.1), "")
	s.Set(kvdbSource, storeddata.KVDBDatabase, ans)
	expect(t, AcknowledgedDataSurvives(), in, verdict.InsufficientData, "could not be read", "storage-integrity")
}

// Both workloads asked: VIOLATED when either is.
func TestAcknowledgedDataSurvivesJudgesBothWorkloads(t *testing.T) {
	kb := newKVDBBench(t)
	a := kb.start(ledgerID("a", "worker1"))
	kvdbOps(t, a, 3)
	c := kb.start(ledgerID("c", "worker2"))
	kvdbOps(t, a, 3)
	kvdbOps(t, c, 3)
	lb := newLedgerBench(t)
	lb.start(ledgerID("a", "worker1")).append(4)
	r := newRun(t)
	ledgerAnswers(t, r, 20, lb.logValue(), lb.historyValue())
	kvdbAnswers(t, &r.Snaps[0], 20, kb.dbValue(), kb.historyValue())
	in := r.Input(invariant.Final)
	in.Timeline = healed()
	j := expect(t, AcknowledgedDataSurvives(), in, verdict.Violated, "every acknowledged append is in the ledger's log", "lost update")
	if j.Violation != LostUpdate || len(j.Sources) != 2 {
		t.Errorf("violation %q from %v", j.Violation, j.Sources)
	}
}

// ext4Image makes a small ext4 file system in a regular file (no root, no
// loop device), with 1 KiB blocks; skipped without e2fsprogs.
func ext4Image(t *testing.T) string {
	t.Helper()
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		if mkfs, err = exec.LookPath("/usr/sbin/mkfs.ext4"); err != nil {
			t.Skip("mkfs.ext4 not installed (e2fsprogs)")
		}
	}
	img := filepath.Join(t.TempDir(), "volume.img")
	if err := os.WriteFile(img, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", "-b", "1024", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	return img
}

// fsckValue runs e2fsck -fn on the image as the volume source would.
func fsckValue(t *testing.T, img string, mounted ...string) storeddata.VolumeFilesystemValue {
	t.Helper()
	r, err := checker.CheckFilesystemImage(context.Background(), img)
	if err != nil {
		t.Skip(err)
	}
	return storeddata.VolumeFilesystemValue{Image: img, ExitCode: r.ExitCode, Output: r.Output, Mounted: mounted}
}

// storageRound is a round at 20 s with the file system check, the
// database and the ledger's log, each when given.
func storageRound(t *testing.T, fs *storeddata.VolumeFilesystemValue, db *storeddata.KVDBDatabaseValue, log *storeddata.LedgerLogValue) invariant.Input {
	r := newRun(t)
	rd := r.Round(20)
	if fs != nil {
		rd.Value(volumeSource, storeddata.VolumeFilesystem, 0.5, *fs, "")
	}
	if db != nil {
		rd.Value(kvdbSource, storeddata.KVDBDatabase, 0.1, *db, "")
	}
	if log != nil {
		rd.Value(ledgerSource, storeddata.LedgerLog, 0.2, *log, "")
	}
	in := r.Input(invariant.Final)
	in.Timeline = healed()
	return in
}

func TestStorageIntegrityPreservedWhenEveryPartChecksClean(t *testing.T) {
	b := newKVDBBench(t)
	kvdbOps(t, b.start(ledgerID("a", "worker1")), 6)
	fs, db := fsckValue(t, ext4Image(t)), b.dbValue()
	j := expect(t, StorageIntegrity(), storageRound(t, &fs, &db, nil), verdict.Preserved,
		"every part checks clean", "e2fsck -fn", "bbolt's check found nothing", "not judged: ledger/log of ledger", "acknowledged-data-survives")
	wantExercised(t, j, true, "2 part(s)")
}

func TestStorageIntegrityViolatedByADamagedFileSystem(t *testing.T) {
	// The positive control: another node's stale inode table block over
	// the image (with 1 KiB blocks the group descriptors are block 2, the
	// first one's bytes 8-11 the inode table's block).
	img := ext4Image(t)
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	table := int64(binary.LittleEndian.Uint32(raw[2048+8:]))
	copy(raw[table*1024:(table+1)*1024], strings.Repeat("\x5a", 1024))
	if err := os.WriteFile(img, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	fs := fsckValue(t, img)
	j := expect(t, StorageIntegrity(), storageRound(t, &fs, nil, nil), verdict.Violated, "the file system is damaged", "Inode")
	if j.Violation != FilesystemDamaged || !j.At.Equal(sec(20.5)) {
		t.Errorf("violation %q at %s", j.Violation, invariant.Stamp(j.At))
	}
	wantExercised(t, j, true)
}

// Damage under a journal the next mount discards (data in it, the
// superblock's needs_recovery flag clear: two mounts' superblocks over one
// image leave that) is what the next mount finds: VIOLATED, not the
// INSUFFICIENT_DATA of a journal that waits to be replayed.
func TestStorageIntegrityViolatedUnderAJournalTheNextMountDiscards(t *testing.T) {
	img := ext4Image(t)
	debugfs, err := exec.LookPath("debugfs")
	if err != nil {
		if debugfs, err = exec.LookPath("/usr/sbin/debugfs"); err != nil {
			t.Skip("debugfs not installed (e2fsprogs)")
		}
	}
	block := filepath.Join(t.TempDir(), "block")
	if err := os.WriteFile(block, []byte(strings.Repeat("j", 1024)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(debugfs, "-w", "-f", "-", img)
	cmd.Stdin = strings.NewReader("jo\njw -b 300 " + block + "\njc\nfeature -needs_recovery\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	table := int64(binary.LittleEndian.Uint32(raw[2048+8:]))
	copy(raw[table*1024:(table+1)*1024], strings.Repeat("\x5a", 1024))
	if err := os.WriteFile(img, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	fs := fsckValue(t, img)
	if !strings.Contains(fs.Output, "journal has data") {
		t.Fatalf("e2fsck did not see the journal's data:\n%s", fs.Output)
	}
	j := expect(t, StorageIntegrity(), storageRound(t, &fs, nil, nil), verdict.Violated, "the file system is damaged", "the next mount discards")
	if j.Violation != FilesystemDamaged {
		t.Errorf("violation %q", j.Violation)
	}
}

func TestStorageIntegrityViolatedByADamagedDatabase(t *testing.T) {
	b := newKVDBBench(t)
	kvdbOps(t, b.start(ledgerID("a", "worker1")), 20)
	db := b.dbValue()
	for i := 2 * 4096; i < len(db.Data); i++ {
		db.Data[i] = 0x5a
	}
	lb := newLedgerBench(t)
	lb.start(ledgerID("a", "worker1")).append(3)
	log := lb.logValue()
	j := expect(t, StorageIntegrity(), storageRound(t, nil, &db, &log), verdict.Violated, "bbolt's check found", "clean: the ledger's log")
	if j.Violation != DatabaseDamaged {
		t.Errorf("violation %q", j.Violation)
	}
}

func TestStorageIntegrityViolatedByADamagedLedger(t *testing.T) {
	lb := newLedgerBench(t)
	lb.start(ledgerID("a", "worker1")).append(5)
	log := lb.logValue()
	log.Data[30] ^= 0xff // inside the first record
	j := expect(t, StorageIntegrity(), storageRound(t, nil, nil, &log), verdict.Violated, "hold no whole record")
	if j.Violation != LedgerDamaged {
		t.Errorf("violation %q", j.Violation)
	}
}

func TestStorageIntegrityInsufficientWhileAMountRemains(t *testing.T) {
	fs := storeddata.VolumeFilesystemValue{Image: "/srv/volumes/kvdb-0.img", ExitCode: 4, Output: "Inode 12 has illegal block(s).  Clear? no\n", Mounted: []string{"worker2"}}
	expect(t, StorageIntegrity(), storageRound(t, &fs, nil, nil), verdict.InsufficientData, "a mount of the volume remains", "worker2")
	lb := newLedgerBench(t)
	lb.start(ledgerID("a", "worker1")).append(2)
	log := lb.logValue("worker1")
	expect(t, StorageIntegrity(), storageRound(t, nil, nil, &log), verdict.InsufficientData, "mounted on worker1")
}

func TestStorageIntegrityInsufficientWhenNothingDecides(t *testing.T) {
	expect(t, StorageIntegrity(), storageRound(t, nil, nil, nil), verdict.InsufficientData)
	// An image e2fsck could not open says nothing of a file system.
	fs := storeddata.VolumeFilesystemValue{Image: "/srv/volumes/absent.img", ExitCode: 8, Output: "e2fsck: No such file or directory while trying to open /srv/volumes/absent.img\n"}
	expect(t, StorageIntegrity(), storageRound(t, &fs, nil, nil), verdict.InsufficientData, "could not check the image")
	// Errors with the journal not replayed may be the journal's to repair.
	fs = storeddata.VolumeFilesystemValue{Image: "/srv/volumes/kvdb-0.img", ExitCode: 4, Output: "Warning: skipping journal recovery because doing a read-only filesystem check.\nBlock bitmap differences:  -(1025--1040)\n"}
	expect(t, StorageIntegrity(), storageRound(t, &fs, nil, nil), verdict.InsufficientData, "journal was not replayed")
	// A part unreadable.
	r := newRun(t)
	r.Round(20).Unreadable(kvdbSource, storeddata.KVDBDatabase, 1, "not deployed: no storage host in this lab")
	expect(t, StorageIntegrity(), r.Input(invariant.Final), verdict.InsufficientData, "not deployed")
}

func TestStorageIntegrityBeforeTheHealIsNotExercised(t *testing.T) {
	lb := newLedgerBench(t)
	lb.start(ledgerID("a", "worker1")).append(2)
	log := lb.logValue()
	in := storageRound(t, nil, nil, &log)
	in.Timeline = nil
	j := expect(t, StorageIntegrity(), in, verdict.Preserved, "checks clean")
	wantExercised(t, j, false, "no heal")
}
