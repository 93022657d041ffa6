// Package crashtest holds the engine's crash tests: a run on memlab killed
// with SIGKILL at each of the engine's crash points (package crashpoint),
// and the next start, in a fresh process, healing what it left. It has no
// code of its own.
package crashtest
