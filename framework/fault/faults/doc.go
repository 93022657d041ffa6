// Package faults is faultline's fault library: every fault the suites
// inject, each written only against lab.Lab and lab.Host (plus the small
// optional interfaces of package lab), each registered with fault.Register
// from its file's init function.
//
// Importing this package (for its constructors, or blank for a program
// that only heals ledger entries) links every fault kind in; it is the one
// import point for all of them.
//
// Every fault's parameters hold all its Heal needs, so a process other than
// the one that injected it heals it from the heal ledger alone. Parameters
// are checked before anything in the lab is touched: a malformed ledger
// entry fails to decode, and Inject resolves and checks every host,
// service and group before its first change.
package faults
