package readers

import (
	"strings"
	"testing"
)

func TestParseIPSetSave(t *testing.T) {
	sets, err := parseIPSetSave("create A hash:net family inet hashsize 1024 maxelem 65536 timeout 0\nadd A 10.0.0.0/8 timeout 0\nadd A 10.244.0.0/16 timeout 0 nomatch\n\ncreate B hash:ip family inet\nadd B 10.244.1.5\n")
	if err != nil {
		t.Fatal(err)
	}
	if a := sets["A"]; a == nil || a.Kind != "hash:net" || len(a.members) != 2 || !a.members[1].nomatch {
		t.Fatalf("A = %+v", a)
	}
	for ip, want := range map[string]bool{"10.1.2.3": true, "10.244.1.5": false, "192.168.0.1": false} {
		if got := sets["A"].contains(ip); got != want {
			t.Errorf("A contains %s = %t", ip, got)
		}
	}
	if !sets["B"].contains("10.244.1.5") || sets["B"].contains("10.244.1.6") {
		t.Error("B's membership misread")
	}
	if _, err := parseIPSetSave("create A hash:ip\ncreate A hash:ip\n"); err == nil || !strings.Contains(err.Error(), "created twice") {
		t.Errorf("a set created twice: %v", err)
	}
	if _, err := parseIPSetSave("create\n"); err == nil {
		t.Error("a create without a name was accepted")
	}
}
