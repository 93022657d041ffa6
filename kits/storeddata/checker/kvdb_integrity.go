package checker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/faultline/faultline/fixtures/kvdb"
)

// DatabaseLooked is what CheckDatabaseIntegrity read.
type DatabaseLooked struct {
	Bytes int64 `json:"bytes"`
	// SHA256 names the exact bytes checked.
	SHA256   string `json:"sha256"`
	PageSize int    `json:"pageSize,omitempty"`
	// TxID is the last committed transaction the meta page names.
	TxID int `json:"txid,omitempty"`
	// Keys is how many keys the workload's bucket holds.
	Keys int `json:"keys"`
}

func (l DatabaseLooked) String() string {
	s := fmt.Sprintf("a bbolt database of %d bytes (sha256 %s)", l.Bytes, shortHash(l.SHA256))
	if l.PageSize > 0 {
		s += fmt.Sprintf(", pages of %d bytes, transaction %d, %d key(s) in the workload's bucket", l.PageSize, l.TxID, l.Keys)
	}
	return s
}

// DatabaseIntegrity is what CheckDatabaseIntegrity found.
type DatabaseIntegrity struct {
	Looked DatabaseLooked `json:"looked"`
	// OpenError: bbolt could not open the file (no valid meta page, a
	// file that is no database): nothing else could be checked.
	OpenError string `json:"openError,omitempty"`
	// Problems are what bbolt's own check (Tx.Check) reported: pages
	// unreachable or reachable twice, freed pages in use, keys out of
	// order, pages past the end.
	Problems []string `json:"problems,omitempty"`
}

// Clean reports whether the database opened and bbolt's check found
// nothing.
func (r DatabaseIntegrity) Clean() bool { return r.OpenError == "" && len(r.Problems) == 0 }

// String says what was checked and what was found.
func (r DatabaseIntegrity) String() string {
	s := "checked " + r.Looked.String()
	switch {
	case r.OpenError != "":
		return s + ": it does not open: " + r.OpenError
	case len(r.Problems) == 0:
		return s + ": bbolt's check found nothing"
	}
	p, more := r.Problems, ""
	if len(p) > 3 {
		p, more = p[:3], fmt.Sprintf(" (%d problems in all)", len(r.Problems))
	}
	return s + ": bbolt's check found " + strings.Join(p, "; ") + more
}

// CheckDatabaseIntegrity runs bbolt's own consistency check (Tx.Check:
// every page reachable once, the freelist consistent with the tree, keys
// in order in every page) on a database file's bytes, opened read-only on
// a copy of its own so that the volume's file is never touched. A clean
// database can still have lost acknowledged updates (two copies taking
// turns by the lock leave perfect pages): never judge on this alone;
// CheckKV reads the histories too.
func CheckDatabaseIntegrity(data []byte) (r DatabaseIntegrity) {
	sum := sha256.Sum256(data)
	r.Looked = DatabaseLooked{Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	if len(data) == 0 {
		r.OpenError = kvdb.ErrEmpty.Error()
		return r
	}
	db, closeCopy, err := kvdb.OpenCopy(data)
	if err != nil {
		r.OpenError = err.Error()
		return r
	}
	defer closeCopy()
	defer func() {
		// bbolt's check can panic on pages it cannot decode at all.
		if p := recover(); p != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("bbolt's check stopped on a page it could not read: %v", p))
		}
	}()
	r.Looked.PageSize = db.Info().PageSize
	err = db.View(func(tx *bolt.Tx) error {
		r.Looked.TxID = tx.ID()
		for e := range tx.Check() {
			r.Problems = append(r.Problems, e.Error())
		}
		if b := tx.Bucket([]byte(kvdb.BucketName)); b != nil {
			r.Looked.Keys = b.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		r.Problems = append(r.Problems, "reading the database: "+err.Error())
	}
	return r
}
