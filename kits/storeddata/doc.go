// Package storeddata is the stored data's kit: whether data a store
// acknowledged survives, written by one writer at a time, in one history,
// on storage that stays whole. It holds the kit's questions and the values
// that answer them (the ledger's log and its writers' history, the kvdb
// database and its history, a volume's file-system check, the
// leader-elected writers' history). Its checkers, which judge what the
// storage holds against the clients' histories, are in package checker,
// and its invariants in package invariants.
//
// A kit builds on the framework's core and no other kit; the core never
// imports it (internal/layering holds both rules).
package storeddata
