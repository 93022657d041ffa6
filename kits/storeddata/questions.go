package storeddata

import "github.com/faultline/faultline/framework/evidence"

// Questions about stored data, declared here so that the invariants and
// the sources that answer them agree on names and value types; until a
// source answers one, every invariant reading it judges
// INSUFFICIENT_DATA. Their values are what was read, raw: the checkers
// decode them with the workload's own code (fixtures/ledgerlog and
// fixtures/kvdb through package checker).
const (
	// LedgerLog is the ledger fixture's log file as the volume holds it
	// (a LedgerLogValue), asked of "ledger".
	LedgerLog evidence.Question = "ledger/log"
	// LedgerHistory is every ledger writer's history as the external
	// store holds it (a LedgerHistoryValue), asked of "ledger". A source
	// reads it after the log: every record in the log then has its
	// append's invoke in the history.
	LedgerHistory evidence.Question = "ledger/history"

	// KVDBDatabase is the embedded database workload's bbolt file as the
	// volume holds it (a KVDBDatabaseValue), asked of "kvdb".
	KVDBDatabase evidence.Question = "kvdb/db"
	// KVDBHistory is every kvdb writer's history as the external store
	// holds it (a LedgerHistoryValue: the same layout of keys under one
	// prefix), asked of "kvdb" after the database.
	KVDBHistory evidence.Question = "kvdb/history"

	// VolumeFilesystem is e2fsck's check of a block volume's image file
	// (a VolumeFilesystemValue), asked of "volume".
	VolumeFilesystem evidence.Question = "volume/fsck"
)

// KVDBDatabaseValue is the kvdb workload's database file.
type KVDBDatabaseValue struct {
	// Path is where the file was read.
	Path string `json:"path"`
	// Data is the file's bytes.
	Data []byte `json:"data"`
	// Mounted names where the volume was mounted when it was read (as
	// LedgerLogValue's); empty when nothing mounted it.
	Mounted []string `json:"mounted,omitempty"`
	// StoreRevision is as LedgerLogValue's.
	StoreRevision int64 `json:"storeRevision,omitempty"`
}

// VolumeFilesystemValue is what e2fsck -fn said of a block volume's image
// file (checker.FilesystemCommand), run where the image lives.
type VolumeFilesystemValue struct {
	// Image is the image file checked.
	Image    string `json:"image"`
	ExitCode int    `json:"exitCode"`
	Output   string `json:"output"`
	// Mounted names where the volume was mounted when it was checked (the
	// nodes whose loop device over the image carried a mount); empty when
	// nothing mounted it. A check of a mounted file system proves nothing.
	Mounted []string `json:"mounted,omitempty"`
}

// LedgerLogValue is the ledger's log file.
type LedgerLogValue struct {
	// Path is where the file was read (on the storage host, or through a
	// mount).
	Path string `json:"path"`
	// Data is the file's bytes.
	Data []byte `json:"data"`
	// Mounted names where the volume was mounted when it was read (the
	// nodes, or "storage" for the storage host's own mount); empty when
	// nothing mounted it, so that no writer could append while it was
	// read.
	Mounted []string `json:"mounted,omitempty"`
	// StoreRevision is the history store's revision read just before the
	// file's read began (zero when that read failed): a writer's put
	// stored at or below it was made before the file was read, in the
	// store's order, whatever the writers' clocks say.
	StoreRevision int64 `json:"storeRevision,omitempty"`
}

// LedgerHistoryValue is every key under the ledger's history prefix, as
// read from the external store in one read.
type LedgerHistoryValue struct {
	Prefix string `json:"prefix"`
	// Revision is the store's revision the keys were read at.
	Revision int64      `json:"revision,omitempty"`
	KVs      []StoredKV `json:"kvs"`
}

// StoredKV is one key and its value, with the store's revisions of the
// key's first put and its last (zero when not recorded): the history
// store's own order of the writers' puts, which no host's clock sets.
type StoredKV struct {
	Key            string `json:"key"`
	Value          string `json:"value"`
	CreateRevision int64  `json:"createRevision,omitempty"`
	ModRevision    int64  `json:"modRevision,omitempty"`
}

// ElectorHistory is every leader-elected writer's history as the history
// store holds it (an ElectorHistoryValue), asked of "elector": each
// operation's invoke, return, outcome, token and store revision
// (fixtures/electorlog's layout).
const ElectorHistory evidence.Question = "elector/history"

// ElectorHistoryValue is every key under the leader-elected writer's
// history prefix, as read from the history store in one read.
type ElectorHistoryValue struct {
	Prefix string `json:"prefix"`
	// Revision is the store's revision the keys were read at.
	Revision int64      `json:"revision,omitempty"`
	KVs      []StoredKV `json:"kvs"`
}
