// Package layering holds the test that keeps faultline's layers apart:
// suites on the framework, the framework on the lab, and no layer on one
// above it. See layering_test.go for the rules and docs/design.md for the layers.
package layering
