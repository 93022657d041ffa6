package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/lab"
)

// KindLedgerRecordDamaged is the kind of LedgerRecordDamage faults.
const KindLedgerRecordDamaged = "ledger-record-damaged"

// How a LedgerRecordDamage damages the record.
const (
	// DamageGarbled overwrites bytes in the middle of the record: its
	// checksum fails, and the log holds bytes that are no whole record.
	DamageGarbled = "garbled"
	// DamageForged replaces the record with a whole record of the same
	// length, sequence and content that no writer made
	// (ledgerlog.Forge): the log still checks clean on its own, and a read
	// that held the record is no prefix of the log any more.
	DamageForged = "forged"
)

// garbage is what DamageGarbled writes in the middle of a record.
var garbage = []byte("DAMAGED!")

// LedgerDamage says which ledger log to damage and how.
type LedgerDamage struct {
	// Namespace and Claim name the PersistentVolumeClaim of the volume
	// the log is on; File is its name in the volume.
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	File      string `json:"file"`
	// Damage is DamageGarbled or DamageForged.
	Damage string `json:"damage"`
}

// LedgerRecordDamage damages one record in the middle of a ledger's log
// (fixtures/ledgerlog) where the storage holds it (lab.VolumeDamager), as
// no writer did: the positive control of storage-integrity's ledger
// check (DamageGarbled) and of single-history's comparison of the log's
// reads (DamageForged, a record replaced by one that checks clean).
//
// Inject chooses the record: the middle one of the whole records the log
// holds then (at least three), so that every read of the log the window
// makes holds it. Strike damages it; the scenario makes Strike its change,
// some sampling rounds into the window, so that reads before the damage
// hold the record and reads after hold the damage. In a null arm nothing
// was injected and Strike does nothing. The damage outlives Heal on
// purpose: it is the stored state the checks judge after heal, and the
// lab's reset makes the volume anew. Heal forgets the choice, so a later
// null arm's Strike and Probe find none.
//
// Strike and Probe act on what the Inject of this value chose, in this
// process: a fault decoded from a ledger entry has chosen nothing, and
// its Heal has nothing to undo.
func LedgerRecordDamage(d LedgerDamage) *LedgerRecordDamaged {
	return &LedgerRecordDamaged{d: d}
}

// LedgerRecordDamaged is the fault LedgerRecordDamage makes.
type LedgerRecordDamaged struct {
	d LedgerDamage

	mu     sync.Mutex
	target *ledgerTarget
}

// ledgerTarget is the record Inject chose and what it is replaced with.
type ledgerTarget struct {
	handle       string
	entry        ledgerlog.Entry
	was, becomes []byte
	struck       bool
}

func (f *LedgerRecordDamaged) Kind() string            { return KindLedgerRecordDamaged }
func (f *LedgerRecordDamaged) Class() fault.Class      { return controls.ClassStorageDamage }
func (f *LedgerRecordDamaged) Params() json.RawMessage { return mustJSON(KindLedgerRecordDamaged, f.d) }

// storage is l's storage, read and damaged.
func storage(l lab.Lab) (lab.StoredData, lab.VolumeDamager, error) {
	sd, ok := l.(lab.StoredData)
	dm, ok2 := l.(lab.VolumeDamager)
	if !ok || !ok2 {
		return nil, nil, lab.Unsupported(l.Info().Kind, "damaging stored data", fmt.Sprintf("lab %s cannot read and damage its storage (lab.StoredData, lab.VolumeDamager)", l.Info().Name))
	}
	return sd, dm, nil
}

func (f *LedgerRecordDamaged) Inject(ctx context.Context, l lab.Lab) error {
	d := f.d
	sd, _, err := storage(l)
	if err != nil {
		return err
	}
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("ledger damage: %w", err)
	}
	handle, err := controls.VolumeHandle(ctx, cs, d.Namespace, d.Claim)
	if err != nil {
		return fmt.Errorf("ledger damage: %w", err)
	}
	file, err := sd.ReadVolumeFile(ctx, handle, d.File)
	if err != nil {
		return fmt.Errorf("ledger damage: reading %s of volume %s: %w", d.File, handle, err)
	}
	c := ledgerlog.Scan(file.Data)
	if len(c.Entries) < 3 {
		return fmt.Errorf("ledger damage: %s holds %d whole record(s); a record in the middle needs three", file.Path, len(c.Entries))
	}
	e := c.Entries[len(c.Entries)/2]
	was := append([]byte(nil), file.Data[e.Offset:e.End()]...)
	var becomes []byte
	switch d.Damage {
	case DamageGarbled:
		becomes = append([]byte(nil), was...)
		copy(becomes[len(becomes)/2-len(garbage)/2:], garbage)
	case DamageForged:
		if becomes, err = ledgerlog.Forge(e); err != nil {
			return fmt.Errorf("ledger damage: %w", err)
		}
	default:
		return fmt.Errorf("ledger damage: %q is neither %s nor %s", d.Damage, DamageGarbled, DamageForged)
	}
	if bytes.Equal(becomes, was) {
		return fmt.Errorf("ledger damage: the %s record %d at %d would be the same bytes", d.Damage, e.Record.Seq, e.Offset)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = &ledgerTarget{handle: handle, entry: e, was: was, becomes: becomes}
	return nil
}

// Strike damages the record Inject chose; with none chosen (a null arm,
// or after Heal) it does nothing, and once struck it does not strike
// again. The record must still be where Inject found it: the log's
// writers append and never write there.
func (f *LedgerRecordDamaged) Strike(ctx context.Context, l lab.Lab) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.target
	if t == nil || t.struck {
		return nil
	}
	sd, dm, err := storage(l)
	if err != nil {
		return err
	}
	file, err := sd.ReadVolumeFile(ctx, t.handle, f.d.File)
	if err != nil {
		return fmt.Errorf("ledger damage: reading %s of volume %s: %w", f.d.File, t.handle, err)
	}
	if int64(len(file.Data)) < t.entry.End() || !bytes.Equal(file.Data[t.entry.Offset:t.entry.End()], t.was) {
		return fmt.Errorf("ledger damage: record %d is no longer at offset %d of %s", t.entry.Record.Seq, t.entry.Offset, file.Path)
	}
	if _, err := dm.OverwriteVolumeFile(ctx, t.handle, f.d.File, t.entry.Offset, t.becomes); err != nil {
		return fmt.Errorf("ledger damage: %w", err)
	}
	t.struck = true
	return nil
}

// Heal forgets the chosen record; the damage stays (see
// LedgerRecordDamage).
func (f *LedgerRecordDamaged) Heal(context.Context, lab.Lab) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = nil
	return nil
}

// Probe sees the fault when the damage Strike wrote is where it wrote it.
func (f *LedgerRecordDamaged) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	f.mu.Lock()
	t := f.target
	var struck bool
	if t != nil {
		struck = t.struck
	}
	f.mu.Unlock()
	switch {
	case t == nil:
		return fault.Effect{Detail: "no record of the ledger's log chosen to damage (nothing injected)"}, nil
	case !struck:
		return fault.Effect{Detail: fmt.Sprintf("record %d at offset %d chosen, not yet %s", t.entry.Record.Seq, t.entry.Offset, f.d.Damage)}, nil
	}
	sd, _, err := storage(l)
	if err != nil {
		return fault.Effect{}, err
	}
	file, err := sd.ReadVolumeFile(ctx, t.handle, f.d.File)
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading %s of volume %s: %w", f.d.File, t.handle, err)
	}
	at := t.entry.Offset
	if int64(len(file.Data)) < t.entry.End() {
		return fault.Effect{Detail: fmt.Sprintf("%s is %d bytes, shorter than the damaged record's end at %d", file.Path, len(file.Data), t.entry.End())}, nil
	}
	held := bytes.Equal(file.Data[at:t.entry.End()], t.becomes)
	return fault.Effect{Observed: held, Detail: fmt.Sprintf("record %d at offset %d of %s %s: %v", t.entry.Record.Seq, at, file.Path, f.d.Damage, held)}, nil
}

func decodeLedgerDamage(raw json.RawMessage) (fault.Fault, error) {
	var d LedgerDamage
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	if d.Namespace == "" || d.Claim == "" || d.File == "" {
		return nil, errors.New("namespace, claim and file are all needed")
	}
	if d.Damage != DamageGarbled && d.Damage != DamageForged {
		return nil, fmt.Errorf("damage %q is neither %s nor %s", d.Damage, DamageGarbled, DamageForged)
	}
	return LedgerRecordDamage(d), nil
}

func init() { fault.Register(KindLedgerRecordDamaged, decodeLedgerDamage) }
