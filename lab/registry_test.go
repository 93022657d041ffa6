package lab

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// alphaSection is the section of the test backends' kind alpha.
type alphaSection struct {
	Endpoint string `json:"endpoint"`
}

func init() {
	Register(Backend{
		Kind:       "alpha",
		Section:    "alpha",
		NewSection: func() any { return new(alphaSection) },
		Defaults: func(c *Config) {
			if s, ok := c.Section().(*alphaSection); ok && s.Endpoint == "" {
				s.Endpoint = "alpha.example:1"
			}
		},
		Validate: func(c *Config) []error {
			if c.Section() == nil {
				return []error{errors.New("alpha: is required for an alpha lab")}
			}
			return nil
		},
		Open: func(c *Config) (Lab, error) { return nil, errors.New("alpha opened") },
	})
	Register(Backend{Kind: "beta", Open: func(c *Config) (Lab, error) { return nil, errors.New("beta opened") },
		Timers: func(c *Config) (Timers, error) {
			return Timers{Profile: c.Kubernetes.TimerProfile, NodeMonitorPeriod: time.Second, NodeMonitorGracePeriod: time.Second,
				NodeStatusUpdateFrequency: time.Second, NotReadyToleration: time.Second, UnreachableToleration: time.Second}, nil
		}})
}

const commonFile = "name: t\nlab: true\nnetwork: {management: 10.1.0.0/24}\nhosts: [{name: cp, roles: [control-plane], address: 10.1.0.2}]\n"

func TestBackendSectionIsDecodedDefaultedAndValidated(t *testing.T) {
	c, err := ParseConfig([]byte("kind: alpha\nalpha: {}\n" + commonFile))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := c.Section().(*alphaSection)
	if !ok || s.Endpoint != "alpha.example:1" {
		t.Fatalf("section = %#v, want the backend's type with its default", c.Section())
	}
	if _, err := ParseConfig([]byte("kind: alpha\n" + commonFile)); err == nil || !strings.Contains(err.Error(), "alpha: is required") {
		t.Errorf("no section: %v, want the backend's own check", err)
	}
	if _, err := ParseConfig([]byte("kind: alpha\nalpha: {endpoint: x, port: 3}\n" + commonFile)); err == nil || !strings.Contains(err.Error(), `alpha: json: unknown field "port"`) {
		t.Errorf("unknown field in the section: %v", err)
	}
	if _, err := ParseConfig([]byte("kind: beta\nalpha: {endpoint: x}\n" + commonFile)); err == nil || !strings.Contains(err.Error(), "alpha: is only for a alpha lab") {
		t.Errorf("another kind's section: %v", err)
	}
	if _, err := ParseConfig([]byte("kind: beta\ngamma: {}\n" + commonFile)); err == nil || !strings.Contains(err.Error(), `unknown field "gamma"`) {
		t.Errorf("a key no backend claims: %v", err)
	}
}

func TestUnknownKindListsTheRegisteredOnes(t *testing.T) {
	_, err := ParseConfig([]byte("kind: gamma\nalpha: {}\n" + commonFile))
	if err == nil || !strings.Contains(err.Error(), `kind: "gamma" is not a lab kind this program knows (registered: alpha, beta)`) {
		t.Errorf("ParseConfig = %v", err)
	}
	if strings.Contains(err.Error(), "only for") {
		t.Errorf("a section is blamed for the kind's fault: %v", err)
	}
	_, err = Open(&Config{Name: "t", Kind: "gamma"})
	if err == nil || !strings.Contains(err.Error(), "lab t: no backend:") || !strings.Contains(err.Error(), "registered: alpha, beta") {
		t.Errorf("Open = %v", err)
	}
	if _, err := Open(&Config{Name: "t", Kind: "beta"}); err == nil || err.Error() != "beta opened" {
		t.Errorf("Open did not reach the backend: %v", err)
	}
	if _, err := ParseConfig([]byte(commonFile)); err == nil || !strings.Contains(err.Error(), "kind: is required (registered: alpha, beta)") {
		t.Errorf("no kind: %v", err)
	}
}

func TestConfigJSONKeepsTheSection(t *testing.T) {
	c, err := ParseConfig([]byte("kind: alpha\nalpha: {endpoint: a.example:2}\n" + commonFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if s, ok := back.Section().(*alphaSection); !ok || s.Endpoint != "a.example:2" {
		t.Errorf("section after a round trip through %s: %#v", b, back.Section())
	}
	if back.Name != "t" || len(back.Hosts) != 1 {
		t.Errorf("round trip lost fields: %+v", back)
	}
}

func TestRegisterRefusesMistakes(t *testing.T) {
	open := func(*Config) (Lab, error) { return nil, nil }
	for name, b := range map[string]Backend{
		"no kind":             {Open: open},
		"no opener":           {Kind: "delta"},
		"twice":               {Kind: "beta", Open: open},
		"section taken":       {Kind: "delta", Section: "alpha", NewSection: func() any { return new(alphaSection) }, Open: open},
		"shared key":          {Kind: "delta", Section: "hosts", NewSection: func() any { return new(alphaSection) }, Open: open},
		"section, no decoder": {Kind: "delta", Section: "delta", Open: open},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register accepted it", name)
				}
			}()
			Register(b)
		}()
	}
	if got := strings.Join(Kinds(), ","); got != "alpha,beta" {
		t.Errorf("Kinds = %s after refused registrations", got)
	}
}

func TestTimersOfAsksTheBackend(t *testing.T) {
	if _, err := TimersOf(&Config{Name: "t", Kind: "alpha"}); err == nil || !strings.Contains(err.Error(), "the alpha backend does not say the timers") {
		t.Errorf("a backend without Timers: %v", err)
	}
	if _, err := TimersOf(&Config{Name: "t", Kind: "gamma"}); err == nil || !strings.Contains(err.Error(), "registered: alpha, beta") {
		t.Errorf("an unknown kind: %v", err)
	}
	// beta reports no leader lease: a suite must not size a window from it.
	if _, err := TimersOf(&Config{Name: "t", Kind: "beta"}); err == nil || !strings.Contains(err.Error(), "leader-elect-lease-duration must be positive") {
		t.Errorf("timers with a value missing: %v", err)
	}
}
