package scenario

import (
	"errors"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// previewed holds the specs that will run, as RunSuite's preview of the
// tree found them; nil until a preview was taken.
var previewed struct {
	sync.Mutex
	specs []previewedSpec
	taken bool
}

// previewedSpec is one spec the preview says will run.
type previewedSpec struct {
	// containers are the texts of the spec's containers, outermost first;
	// the scenario's is its pairKey.
	containers []string
	text       string
	// labels are the spec's labels, its containers' included: a repeated
	// spec's round is its repetition: label.
	labels []string
}

// RunSuite adds the specs of the table Register registered and runs them,
// as Ginkgo's RunSpecs does, with the same arguments; a suite's test
// function calls it in RunSpecs' place:
//
//	func TestMyPaper(t *testing.T) {
//		RegisterFailHandler(Fail)
//		scenario.RunSuite(t, "my paper")
//	}
//
// The specs are added here, once the test binary's command line is parsed,
// because -faultline.repeat decides how many there are (one per scenario ×
// arm × repetition; see registerSpecs).
//
// Over a pool of labs it first previews the tree (Ginkgo's PreviewSpecs:
// the same filters, focus and labels, nothing run), so that the engine
// knows which specs will run and can check every lab of the pool against
// their shapes before any runs: Ginkgo hands specs to processes as they
// ask, and cannot send one to the process whose lab has its shape.
func RunSuite(t ginkgo.GinkgoTestingT, description string, args ...any) bool {
	addRegisteredSpecs()
	if poolGiven() {
		rep := ginkgo.PreviewSpecs(description, args...)
		previewed.Lock()
		previewed.specs, previewed.taken = willRun(rep), true
		previewed.Unlock()
	}
	return ginkgo.RunSpecs(t, description, args...)
}

// willRun are the specs of a preview report that will run (a preview
// marks them passed, and those the filters leave out skipped or pending).
func willRun(rep types.Report) []previewedSpec {
	var out []previewedSpec
	for _, s := range rep.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || s.State != types.SpecStatePassed {
			continue
		}
		out = append(out, previewedSpec{containers: s.ContainerHierarchyTexts, text: s.LeafNodeText, labels: s.Labels()})
	}
	return out
}

// plannedRun is one run a spec will make: a scenario × arm and its
// repetition.
type plannedRun struct {
	sc  Scenario
	rep int
}

// previewedRuns are the runs the preview says the specs will make, in the
// order of the preview; false when no preview was taken.
func (st *suiteState) previewedRuns() ([]plannedRun, bool) {
	previewed.Lock()
	defer previewed.Unlock()
	if !previewed.taken {
		return nil, false
	}
	return runsOf(previewed.specs, st.byPair), true
}

// runsOf finds the scenario of each spec by its container's text, and its
// repetition by its labels.
func runsOf(specs []previewedSpec, byPair map[string]Scenario) []plannedRun {
	var out []plannedRun
	for _, s := range specs {
		for _, c := range s.containers {
			if sc, ok := byPair[c]; ok {
				out = append(out, plannedRun{sc: sc, rep: repetitionOfLabels(s.labels)})
				break
			}
		}
	}
	return out
}

// errNoRunSuite is the refusal of a suite whose test function called
// Ginkgo's RunSpecs: its table's specs were never added.
var errNoRunSuite = errors.New("scenario.Register keeps the suite's table and scenario.RunSuite adds its specs (how many depends on -faultline.repeat, known once the command line is parsed): call scenario.RunSuite in the suite's test function instead of Ginkgo's RunSpecs")
