package local

import (
	"fmt"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/state"
	"github.com/faultline/faultline/lab/timers"
)

// A lab brought up with `lab up --profile fast` and opened later from a file
// that says kubernetes-defaults must report the profile it runs with.
func TestInfoNamesTheProfileTheRunningLabWasBroughtUpWith(t *testing.T) {
	path := "../../testdata/labs/pair.yaml"
	file, err := lab.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	file.StateDir = t.TempDir()
	file.Kubernetes.TimerProfile = lab.ProfileKubernetesDefaults

	l, err := New(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Info().TimerProfile; got != lab.ProfileKubernetesDefaults {
		t.Fatalf("no lab up: profile %q, want the file's %q", got, lab.ProfileKubernetesDefaults)
	}

	running := *file
	running.Kubernetes.TimerProfile = lab.ProfileFast
	if err := state.Save(file.StateDir, &state.Record{Config: &running}); err != nil {
		t.Fatal(err)
	}
	l, err = New(file)
	if err != nil {
		t.Fatal(err)
	}
	info := l.Info()
	if info.TimerProfile != lab.ProfileFast {
		t.Errorf("lab up with fast, opened from a kubernetes-defaults file: Info says %q", info.TimerProfile)
	}
	fast, err := timers.Get(lab.ProfileFast)
	if err != nil {
		t.Fatal(err)
	}
	if want := fast.Flat(); fmt.Sprint(info.Timers) != fmt.Sprint(want) {
		t.Errorf("timer values %v, want the fast profile's %v", info.Timers, want)
	}
	// Suites size their windows from what the running lab reports.
	if got, err := l.Timers(); err != nil || got != fast.Timers() {
		t.Errorf("Timers() = %+v, %v; want the fast profile's %+v", got, err, fast.Timers())
	}
	if got, err := lab.TimersOf(file); err != nil || got.Profile != lab.ProfileKubernetesDefaults {
		t.Errorf("TimersOf(the file) = %+v, %v; want the file's kubernetes-defaults", got, err)
	}
	if l.asked.TimerProfile != lab.ProfileKubernetesDefaults {
		t.Errorf("the profile asked for was lost: %q", l.asked.TimerProfile)
	}
	if file.Kubernetes.TimerProfile != lab.ProfileKubernetesDefaults {
		t.Error("New changed the caller's config")
	}
}
