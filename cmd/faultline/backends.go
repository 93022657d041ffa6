package main

// Every lab backend registers its kind with the lab package from its init
// function; lab/backends links them all, so this program opens a lab of
// any kind. A kind no backend registers is reported with the registered
// ones when its lab file is read.

import _ "github.com/faultline/faultline/lab/backends"
