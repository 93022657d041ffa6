package source

import (
	"context"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
)

// fixedReader answers every question it is asked with one value, and one
// question it was not asked, which Combined must drop.
type fixedReader struct {
	name      evidence.Source
	questions []evidence.Question
	value     string
}

func (f fixedReader) Source() evidence.Source        { return f.name }
func (f fixedReader) Questions() []evidence.Question { return f.questions }
func (f fixedReader) Read(context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{"not/asked": answer(f.value, now(), "")}
	for _, q := range f.questions {
		out[q] = answer(f.value, now(), "")
	}
	return out
}

func TestCombineAnswersEachQuestionFromItsOwnReader(t *testing.T) {
	c, err := Combine(
		fixedReader{"apiserver/cp1", []evidence.Question{evidence.NodeReady, evidence.PodObject}, "a"},
		fixedReader{"apiserver/cp1", []evidence.Question{evidence.DeploymentReplicas}, "b"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source() != "apiserver/cp1" || len(c.Questions()) != 3 {
		t.Fatalf("source %s, questions %v", c.Source(), c.Questions())
	}
	got := c.Read(context.Background())
	if len(got) != 3 {
		t.Errorf("answers %v: want only the three questions asked", got)
	}
	for q, want := range map[evidence.Question]string{evidence.NodeReady: `"a"`, evidence.PodObject: `"a"`, evidence.DeploymentReplicas: `"b"`} {
		if string(got[q].Value) != want {
			t.Errorf("%s: %s, want %s", q, got[q].Value, want)
		}
	}
}

func TestCombineRefusesMixedSourcesAndRepeatedQuestions(t *testing.T) {
	for name, tc := range map[string]struct {
		parts   []evidence.Reader
		wantErr string
	}{
		"none": {nil, "none given"},
		"two sources": {[]evidence.Reader{
			fixedReader{"apiserver/cp1", []evidence.Question{evidence.NodeReady}, "a"},
			fixedReader{"apiserver/cp2", []evidence.Question{evidence.PodObject}, "b"},
		}, "different sources"},
		"one question twice": {[]evidence.Reader{
			fixedReader{"apiserver/cp1", []evidence.Question{evidence.NodeReady}, "a"},
			fixedReader{"apiserver/cp1", []evidence.Question{evidence.NodeReady}, "b"},
		}, "asked twice"},
	} {
		_, err := Combine(tc.parts...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.wantErr)
		}
	}
}
