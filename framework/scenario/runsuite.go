package scenario

import (
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
}

// RunSuite runs the suite's specs, as Ginkgo's RunSpecs does, with the same
// arguments; a suite's test function calls it in RunSpecs' place:
//
//	func TestMyPaper(t *testing.T) {
//		RegisterFailHandler(Fail)
//		scenario.RunSuite(t, "my paper")
//	}
//
// Over a pool of labs it first previews the tree (Ginkgo's PreviewSpecs:
// the same filters, focus and labels, nothing run), so that the engine
// knows which specs will run and can check every lab of the pool against
// their shapes before any runs: Ginkgo hands specs to processes as they
// ask, and cannot send one to the process whose lab has its shape.
func RunSuite(t ginkgo.GinkgoTestingT, description string, args ...any) bool {
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
		out = append(out, previewedSpec{containers: s.ContainerHierarchyTexts, text: s.LeafNodeText})
	}
	return out
}

// previewedScenarios are the table's scenarios the preview says will run,
// in the order of the preview; false when no preview was taken.
func (st *suiteState) previewedScenarios() ([]Scenario, bool) {
	previewed.Lock()
	defer previewed.Unlock()
	if !previewed.taken {
		return nil, false
	}
	return scenariosOf(previewed.specs, st.byPair), true
}

// scenariosOf finds the scenario of each spec by its container's text.
func scenariosOf(specs []previewedSpec, byPair map[string]Scenario) []Scenario {
	var out []Scenario
	for _, s := range specs {
		for _, c := range s.containers {
			if sc, ok := byPair[c]; ok {
				out = append(out, sc)
				break
			}
		}
	}
	return out
}
