package templates

import (
	"strings"
	"testing"
	"time"
)

func TestSmokeInTheReport(t *testing.T) {
	r := newRenderer(t, Options{})
	rep := richReport()
	rep.Verification = append(rep.Verification,
		VerifyRow{Name: "smoke: image build", Command: "docker build -f Dockerfile . (no network)", Passed: true, Duration: 9 * time.Second},
		VerifyRow{Name: "smoke: health", Command: "GET /health → 200 within 1m0s", Passed: true, Duration: 300 * time.Millisecond})
	body := mustPR(t, r, rep)
	for _, want := range []string{"| smoke: image build | `docker build -f Dockerfile . (no network)` | ✅ pass |", "| smoke: health | `GET /health → 200 within 1m0s` | ✅ pass |"} {
		if !strings.Contains(body, want) {
			t.Errorf("PR body lacks the row %q", want)
		}
	}
	rep.Smoke = "The smoke stage was skipped: turned off on this server (SELFCODE_SMOKE_ENABLED=false)."
	body = mustPR(t, r, rep)
	_, after, _ := strings.Cut(body, "## Verification\n\n")
	if !strings.HasPrefix(after, rep.Smoke+"\n\n|") {
		t.Errorf("the note does not open the verification section:\n%s", after[:min(len(after), 300)])
	}
}
