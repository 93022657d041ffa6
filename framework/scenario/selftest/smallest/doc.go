// Package smallest is the smallest complete paper suite, the one the
// framework's README shows, on memlab: one scenario with its null arm, the
// engine's self-check on. The scenario package's tests run it as a
// subprocess and check what it records.
package smallest
