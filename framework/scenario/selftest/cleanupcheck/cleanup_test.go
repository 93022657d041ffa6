package cleanupcheck

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const envDir = "FAULTLINE_CLEANUPCHECK_DIR"

func TestCleanupCheck(t *testing.T) {
	if os.Getenv(envDir) == "" {
		t.Skip("run by the scenario package's tests, which set " + envDir)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "DeferCleanup on interrupt")
}

var _ = Describe("a spec interrupted in its It", func() {
	dir := os.Getenv(envDir)
	JustBeforeEach(func() {
		DeferCleanup(func() {
			Expect(os.WriteFile(filepath.Join(dir, "cleaned"), nil, 0o644)).To(Succeed())
		})
		Expect(os.WriteFile(filepath.Join(dir, "injected"), nil, 0o644)).To(Succeed())
	})
	It("waits to be interrupted", func(ctx SpecContext) {
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Minute):
		}
	})
})
