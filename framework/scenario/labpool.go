package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/lab"
)

// EnvLabs names a pool of labs for one suite run split over Ginkgo's
// parallel processes (`ginkgo --procs=N`): lab files or topology names,
// comma-separated, each named as EnvLab names one. Process N owns the
// N-th for the whole run.
const EnvLabs = "FAULTLINE_LABS"

// EnvPool names a pool file: YAML listing the pool's labs (see PoolFile).
// A bare name is looked up as testdata/pools/<name>.yaml.
const EnvPool = "FAULTLINE_POOL"

// LabPool is the labs of one suite run over several Ginkgo processes:
// process N (GinkgoParallelProcess) owns Entries[N-1] for the whole run,
// and no other process touches it.
type LabPool struct {
	// Entries name the labs in the order processes own them, each as
	// FAULTLINE_LAB names one (a lab file, or a topology name), or as the
	// suite's OpenLabEntry reads them.
	Entries []string
	// From says where the pool was named, for messages:
	// "$FAULTLINE_LABS", or "pool file <path> ($FAULTLINE_POOL)".
	From string
}

// PoolFile is a pool file's content:
//
//	# two labs of lab11's shape, one per ginkgo process
//	labs:
//	  - lab11                      # a topology name, as FAULTLINE_LAB takes
//	  - ../labs/lab11b.yaml        # a lab file, relative to this file
//
// Unknown fields are errors.
type PoolFile struct {
	Labs []string `json:"labs"`
}

// poolGiven reports whether the environment names a pool at all (well
// formed or not): the specs' decorators are chosen from it when the tree
// is built, before the pool can be read and refused.
func poolGiven() bool {
	return os.Getenv(EnvLabs) != "" || os.Getenv(EnvPool) != ""
}

// PoolFromEnv reads the pool $FAULTLINE_LABS or $FAULTLINE_POOL names; nil
// when neither is set. Naming a lab and a pool, or both kinds of pool, is
// an error: which labs the run is over would be a guess.
func PoolFromEnv() (*LabPool, error) {
	var set []string
	for _, v := range []string{EnvLab, EnvLabs, EnvPool} {
		if os.Getenv(v) != "" {
			set = append(set, v)
		}
	}
	if len(set) > 1 {
		return nil, fmt.Errorf("both %s are set: a suite runs over one lab (%s) or one pool of labs (%s or %s), so unset all but one",
			strings.Join(set, " and "), EnvLab, EnvLabs, EnvPool)
	}
	if v := os.Getenv(EnvLabs); v != "" {
		entries, err := ParsePoolList(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %v", EnvLabs, v, err)
		}
		return &LabPool{Entries: entries, From: "$" + EnvLabs}, nil
	}
	if v := os.Getenv(EnvPool); v != "" {
		path, err := resolvePoolPath(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %v", EnvPool, v, err)
		}
		p, err := LoadPoolFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %v", EnvPool, v, err)
		}
		p.From += " ($" + EnvPool + ")"
		return p, nil
	}
	return nil, nil
}

// ParsePoolList splits a comma-separated list of labs: spaces around an
// entry are dropped; an empty entry, or one named twice, is an error
// naming it.
func ParsePoolList(s string) ([]string, error) {
	var entries []string
	for i, part := range strings.Split(s, ",") {
		e := strings.TrimSpace(part)
		if e == "" {
			return nil, fmt.Errorf("entry %d is empty: list lab files or topology names separated by commas", i+1)
		}
		entries = append(entries, e)
	}
	if err := checkPoolEntries(entries); err != nil {
		return nil, err
	}
	return entries, nil
}

// LoadPoolFile reads a pool file. An entry that is a path (it holds a
// slash or ends in .yaml or .yml) and is relative is taken relative to the
// pool file's folder; a bare name is a topology name, as FAULTLINE_LAB
// takes one.
func LoadPoolFile(path string) (*LabPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the pool file: %w", err)
	}
	var pf PoolFile
	if err := yaml.UnmarshalStrict(b, &pf); err != nil {
		return nil, fmt.Errorf("pool file %s: %v", path, err)
	}
	if len(pf.Labs) == 0 {
		return nil, fmt.Errorf("pool file %s: labs: lists no lab (a pool file is `labs: [lab11, lab11b.yaml]`)", path)
	}
	dir := filepath.Dir(path)
	entries := make([]string, len(pf.Labs))
	for i, e := range pf.Labs {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("pool file %s: labs[%d] is empty", path, i)
		}
		if isPathEntry(e) && !filepath.IsAbs(e) {
			e = filepath.Join(dir, e)
		}
		entries[i] = e
	}
	if err := checkPoolEntries(entries); err != nil {
		return nil, fmt.Errorf("pool file %s: %v", path, err)
	}
	return &LabPool{Entries: entries, From: "pool file " + path}, nil
}

func isPathEntry(e string) bool {
	return strings.Contains(e, "/") || strings.HasSuffix(e, ".yaml") || strings.HasSuffix(e, ".yml")
}

// checkPoolEntries refuses an entry named twice: two processes on one lab
// would judge each other's faults. (Two names for one lab are caught once
// the labs are open, by their names and state dirs.)
func checkPoolEntries(entries []string) error {
	seen := map[string]int{}
	for i, e := range entries {
		key := e
		if isPathEntry(e) {
			key = filepath.Clean(e)
		}
		if j, dup := seen[key]; dup {
			return fmt.Errorf("entry %d (%s) is entry %d again: each lab of a pool is one process's alone", i+1, e, j)
		}
		seen[key] = i + 1
	}
	return nil
}

// Entry is the lab that Ginkgo process `process` (1-based) of `total`
// owns. More processes than labs is an error naming both counts; fewer
// leaves the last labs idle (Idle names them).
func (p *LabPool) Entry(process, total int) (string, error) {
	if err := p.fits(total); err != nil {
		return "", err
	}
	if process < 1 || process > total {
		return "", fmt.Errorf("ginkgo process %d of %d: no such process", process, total)
	}
	return p.Entries[process-1], nil
}

// fits refuses more processes than the pool has labs.
func (p *LabPool) fits(total int) error {
	if total > len(p.Entries) {
		return fmt.Errorf("%d ginkgo processes but the lab pool (%s) has %d labs (%s): each process owns one lab for the whole run; run with ginkgo --procs=%d, or add labs to the pool",
			total, p.From, len(p.Entries), strings.Join(p.Entries, ", "), len(p.Entries))
	}
	return nil
}

// InUse are the entries the processes of a run with `total` processes own.
func (p *LabPool) InUse(total int) []string {
	return p.Entries[:min(total, len(p.Entries))]
}

// Idle are the entries no process owns in a run of `total` processes.
func (p *LabPool) Idle(total int) []string {
	return p.Entries[min(total, len(p.Entries)):]
}

// resolvePoolPath finds a pool file as ResolveConfigPath finds a lab file:
// an existing file as given; a relative path found in a parent directory
// (ginkgo runs a suite in its package directory); a bare name as
// testdata/pools/<name>.yaml here or in a parent directory.
func resolvePoolPath(arg string) (string, error) {
	return lab.ResolveTestdataFile(arg, "pool", "pools")
}

// errNoPreview is the refusal of a pooled run whose test function called
// Ginkgo's RunSpecs, so the specs that will run are not known up front.
var errNoPreview = errors.New("a suite run over a lab pool must call scenario.RunSpecs in its test function instead of Ginkgo's RunSpecs: it previews the specs that will run, so that every lab of the pool is checked against their shapes before any runs (Ginkgo hands specs to processes as they ask and cannot route one to a lab that has its shape)")
