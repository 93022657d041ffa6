// Package crashmatrix is the crash matrix: for every fault kind the
// registry holds and every moment a run can die at (before inject, inside
// its inject, in the window, inside its heal, after heal before its heal
// ledger entry is removed, and `faultline heal` itself killed mid-heal and
// run again), a run on a local lab is killed with SIGKILL there
// (framework/crashpoint), the lab is healed from the heal ledger by
// `faultline heal` in a fresh process, and the lab is checked against the
// fingerprint it had before: no iptables rule, ipset, qdisc, frozen
// process or cgroup, skewed clock, authorization rule, pinned kubeconfig,
// fence, mount or loop device left, every node Ready and every lease held.
// The matrix lives in its tests (build tag lab, root); see the fault
// library's README for how to run it and what it found.
package crashmatrix
