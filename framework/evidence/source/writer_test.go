package source

import (
	"strings"
	"testing"
)

// writerLog is the shape of the writer's stdout (fixtures/images/writer),
// with a line of the Go log package mixed in, as GetLogs returns stdout
// and stderr together.
const writerLog = `{"writer":"writer","round":1,"op":"read","invoke":"2026-11-01T10:00:00.000Z","return":"2026-11-01T10:00:00.010Z","value":"","found":false,"outcome":"ok"}
{"writer":"writer","round":1,"op":"create","invoke":"2026-11-01T10:00:00.011Z","return":"2026-11-01T10:00:00.030Z","value":"writer-1","outcome":"ok"}
2026/11/01 10:00:00 some message from the log package
{"writer":"writer","round":2,"op":"read","invoke":"2026-11-01T10:00:00.200Z","return":"2026-11-01T10:00:00.210Z","value":"writer-1","version":"41","found":true,"outcome":"ok"}
{"writer":"writer","round":2,"op":"cas","invoke":"2026-11-01T10:00:00.211Z","return":"2026-11-01T10:00:05.211Z","value":"writer-2","expect":"writer-1","version":"41","outcome":"unknown","error":"context deadline exceeded"}
`

func TestRegisterOpsFromLog(t *testing.T) {
	ops, err := RegisterOpsFromLog([]byte(writerLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 4 || ops[1].Op != "create" || ops[3].Outcome != "unknown" || ops[3].Expect != "writer-1" || *ops[2].Found != true {
		t.Fatalf("decoded %+v", ops)
	}
	// A last line cut off mid-write is left for the next read.
	cut := writerLog + `{"writer":"writer","round":3,"op":"re`
	if ops, err := RegisterOpsFromLog([]byte(cut)); err != nil || len(ops) != 4 {
		t.Errorf("cut last line: %d ops, %v", len(ops), err)
	}
	for name, c := range map[string]struct{ log, want string }{
		"rotated":     {writerLog[strings.Index(writerLog, "2026/11/01"):], "starts at round 2"},
		"gap":         {strings.Replace(writerLog, `"round":2`, `"round":4`, 2), "jumps from round 1 to 4"},
		"broken line": {strings.Replace(writerLog, `"op":"create"`, `"op":"create",`, 1), "line 2"},
		"stray field": {strings.Replace(writerLog, `"op":"create"`, `"op":"create","extra":1`, 1), "extra"},
	} {
		if _, err := RegisterOpsFromLog([]byte(c.log)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}
