// Package e2eframework is an example: a plain sigs.k8s.io/e2e-framework
// test whose cluster is faultline's local lab, brought up and down with
// envfuncs.CreateClusterWithOpts and envfuncs.DestroyCluster through the
// lab/local/e2eprovider provider. Its tests carry the build tag `lab`
// (they bring a lab up, as root); README.md says how to run them.
package e2eframework
