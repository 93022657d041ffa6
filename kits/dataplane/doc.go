// Package dataplane is the data plane's kit: whether the node agents
// (kube-proxy, a NetworkPolicy agent, CoreDNS) apply what the API
// records. It holds the kit's questions and the values that answer them
// (what the API records of the agents' service, policies and DNS name;
// what each node's agents applied; what a new connection from a pod
// finds; what the agents say of their health). Its readers are in
// package readers and its invariants in package invariants.
//
// A kit builds on the framework's core and no other kit; the core never
// imports it (internal/layering holds both rules).
package dataplane
