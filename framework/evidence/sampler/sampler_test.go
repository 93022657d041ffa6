package sampler

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
)

func TestCommandSourcesGetTheirOwnTimeout(t *testing.T) {
	s := New(Options{ReadTimeout: time.Second, CommandReadTimeout: 3 * time.Second})
	if got := s.timeoutOf(&source.Runtime{}); got != 3*time.Second {
		t.Errorf("runtime source timeout %s", got)
	}
	if got := s.timeoutOf(&source.Proxy{}); got != 3*time.Second {
		t.Errorf("proxy source timeout %s", got)
	}
	if got := s.timeoutOf(source.NewAPIServer("apiserver/x", nil, evidence.DefaultSubjects)); got != time.Second {
		t.Errorf("API server source timeout %s", got)
	}
	d := New(Options{})
	if d.opts.ReadTimeout != evidence.DefaultReadTimeout || d.opts.CommandReadTimeout != DefaultCommandReadTimeout {
		t.Errorf("defaults %+v", d.opts)
	}
}
