package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/suites/drills"
)

// Files the drill reports write into a run folder.
const (
	PairReportFile  = "drill-pair.md"
	PairPlotFile    = "drill-pair.png"
	RacksReportFile = "drill-racks.md"
)

// ErrNoDrillRuns says a run folder holds no run of the drills.
var ErrNoDrillRuns = errors.New("no drill runs")

// WriteFolder writes the drill reports of a run folder into it: the pair
// report and plot when the folder holds both pair arms, the racks report
// when it holds a racks run. It returns the files written; ErrNoDrillRuns
// when there is nothing to write.
func WriteFolder(dir string) ([]string, error) {
	latest, err := latestFaultRuns(dir)
	if err != nil {
		return nil, err
	}
	var written []string
	c, okC := latest[drills.IDKubeletStopped]
	e, okE := latest[drills.IDPowerOff]
	switch {
	case okC && okE:
		files, err := writePair(dir, c, e)
		if err != nil {
			return written, err
		}
		written = append(written, files...)
	case okC || okE:
		return written, oneArm(dir, okC)
	}
	var rackRuns []verdict.Run
	for _, id := range []string{drills.IDRackCut, drills.IDRackForce} {
		if r, ok := latest[id]; ok {
			rackRuns = append(rackRuns, r)
		}
	}
	if len(rackRuns) > 0 {
		path := filepath.Join(dir, RacksReportFile)
		if err := writeRacks(dir, path, rackRuns); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	if len(written) == 0 {
		return nil, ErrNoDrillRuns
	}
	return written, nil
}

// latestFaultRuns is the latest fault-arm run of each scenario in dir.
func latestFaultRuns(dir string) (map[string]verdict.Run, error) {
	runs, err := record.ReadRuns(dir)
	if err != nil {
		return nil, err
	}
	latest := map[string]verdict.Run{}
	for _, r := range runs {
		if r.Arm != "fault" {
			continue
		}
		if prev, ok := latest[r.Scenario]; !ok || r.Started.After(prev.Started) {
			latest[r.Scenario] = r
		}
	}
	return latest, nil
}

// oneArm is the error of a folder holding one arm of the pair drill:
// the control (kubelet stopped) when control is true.
func oneArm(dir string, control bool) error {
	have, want := drills.IDPowerOff, drills.IDKubeletStopped
	if control {
		have, want = want, have
	}
	return fmt.Errorf("%s holds only one arm of the pair drill (%s without %s): the comparison needs both in one run folder", dir, have, want)
}

// workerOf names the worker of a pair run: the one runtime the drill's
// containers were read from.
func workerOf(rec evidence.Record) (string, error) {
	if rec.Baseline == nil {
		return "", errors.New("the run has no baseline snapshot")
	}
	var workers []string
	for _, src := range rec.Baseline.Sources() {
		if strings.HasPrefix(string(src), "cri/") && rec.Baseline.Get(src, drills.QuestionContainers).State != evidence.NotAsked {
			workers = append(workers, strings.TrimPrefix(string(src), "cri/"))
		}
	}
	if len(workers) != 1 {
		return "", fmt.Errorf("the pair drill reads one worker's runtime; the baseline has %d (%v)", len(workers), workers)
	}
	return workers[0], nil
}

func analyse(dir string, r verdict.Run) (PairArm, error) {
	rec, err := record.ReadEvidence(dir, r.RunID)
	if err != nil {
		return PairArm{}, err
	}
	w, err := workerOf(rec)
	if err != nil {
		return PairArm{}, fmt.Errorf("run %s: %w", r.RunID, err)
	}
	return AnalysePair(r, rec, w)
}

func writePair(dir string, cr, er verdict.Run) ([]string, error) {
	c, err := analyse(dir, cr)
	if err != nil {
		return nil, err
	}
	e, err := analyse(dir, er)
	if err != nil {
		return nil, err
	}
	plot := filepath.Join(dir, PairPlotFile)
	if err := PlotPair(c, e, plot); err != nil {
		return nil, err
	}
	md := filepath.Join(dir, PairReportFile)
	if err := writeFile(md, func(w io.Writer) error { return WritePairMarkdown(w, c, e, PairPlotFile) }); err != nil {
		return nil, err
	}
	return []string{md, plot}, nil
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
