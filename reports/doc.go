// Package reports renders run records: a run folder's summary.md (the
// runs, a verdict table per run, the finding rates, the positive controls
// and null arms apart, the applicability table), and the tallies and
// control checks the aggregate report (package aggregate) builds on. It
// reads records only through framework/record, which owns their format.
//
// Linking this package registers WriteSummary as a renderer of every run
// folder a suite finishes (record.RegisterRenderer); a suite's test links
// it with a blank import.
package reports
