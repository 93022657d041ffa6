package main

// Every lab backend registers its kind with the lab package from its init
// function; lab/backends links them all, so this program opens a lab of
// any kind. A kind no backend registers is reported with the registered
// ones when its lab file is read.
//
// fixtures/images provides the images a lab without a registry (the local
// lab) loads into its nodes: the suites' fixtures, which the lab backends
// do not know.

import (
	_ "github.com/faultline/faultline/fixtures/images"
	_ "github.com/faultline/faultline/lab/backends"
)
