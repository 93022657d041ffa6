package scenario

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EnvRepeat is how many times each selected scenario × arm runs into the
// one run folder, as the -faultline.repeat flag of the suite's test binary
// says it (the flag wins). Default 1.
const EnvRepeat = "FAULTLINE_REPEAT"

// RepeatFlag is the suite flag that repeats every selected scenario × arm:
// `ginkgo ./suites/disagree -- -faultline.repeat=5`, or
// `go test ./suites/disagree -args -faultline.repeat=5`.
const RepeatFlag = "faultline.repeat"

// repeatFlagValue is the flag's value as given; registerRepeatFlag binds
// it. A string, so that an unset flag leaves $FAULTLINE_REPEAT in force.
var repeatFlagValue string

// registerRepeatFlag adds -faultline.repeat to the test binary's flags.
// Register calls it at package initialisation, before the testing package
// parses the command line.
func registerRepeatFlag() {
	if flag.Lookup(RepeatFlag) != nil {
		return
	}
	flag.StringVar(&repeatFlagValue, RepeatFlag, "",
		"run each selected scenario × arm this many times into one run folder, interleaved: every scenario's arms once, then the next repetition (default $"+EnvRepeat+", else 1)")
}

// repeatCount is how many times each scenario × arm runs: the flag, else
// $FAULTLINE_REPEAT, else 1. Anything but a whole number from 1 is an
// error naming where it was given.
func repeatCount() (int, error) {
	v, how := repeatFlagValue, "-"+RepeatFlag
	if v == "" {
		v, how = os.Getenv(EnvRepeat), "$"+EnvRepeat
	}
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 1, fmt.Errorf("%s=%s: give how many times each scenario × arm runs, a whole number from 1 (nothing was touched)", how, v)
	}
	return n, nil
}

// repetitionText names one round of a repeated suite run, as its
// containers and messages say it.
func repetitionText(rep, of int) string { return fmt.Sprintf("repetition %d of %d", rep, of) }

// repetitionLabel is the label of a repeated spec's round: repetition:2.
func repetitionLabel(rep int) string { return LabelRepetition + strconv.Itoa(rep) }

// repetitionOfLabels reads the round from a spec's labels; 1 where none is
// given (a suite run without repetitions).
func repetitionOfLabels(labels []string) int {
	for _, l := range labels {
		if v, ok := strings.CutPrefix(l, LabelRepetition); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 1 {
				return n
			}
		}
	}
	return 1
}
