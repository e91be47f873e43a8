package pipeline_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// The pristine copy of a base that failed with a kept setup is made in the
// job's scratch space (a server job's workspace in the data directory),
// not in the host's /tmp, and removed once the base is verified again.
func TestPristineCopyInTheJobsScratch(t *testing.T) {
	t.Parallel()
	scratch := t.TempDir()
	var dsts []string
	out := runKeptSetupJob(t, keptSetup{spoils: true}, func(in *pipeline.Input) {
		export := in.Pristine
		in.Scratch = scratch
		in.Pristine = func(ctx context.Context, dst string) error {
			dsts = append(dsts, dst)
			return export(ctx, dst)
		}
	}).out
	if out.Verdict != verify.Verified {
		t.Errorf("verdict %q (%+v)", out.Verdict, out.Comparison)
	}
	if len(dsts) != 1 || filepath.Dir(dsts[0]) != scratch {
		t.Errorf("pristine copies made in %q, want one in %s", dsts, scratch)
	}
	if left, err := os.ReadDir(scratch); err != nil || len(left) > 0 {
		t.Errorf("left in the scratch space: %v (%v)", left, err)
	}
}

// A base that failed with a kept setup and cannot be exported again does
// not end the job: its run with the kept setup is the baseline,
// unconfirmed, never cached; the change is verified with setup from
// scratch; and no failure of that base excuses one of the change — a
// test failing on both makes the change unverified, not verified.
func TestUnexportableBaseIsUnconfirmed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                                 string
		keptSpoils, changeBreaks, baseBreaks bool
		verdict                              verify.Verdict
	}{
		{"the change passes everything", true, false, false, verify.Verified},
		{"a test fails on the change and, with the kept setup, on the base", true, true, false, verify.Unverified},
		{"a test fails on the base however it is set up", false, false, true, verify.Unverified},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var base string
			r := runKeptSetupJob(t, keptSetup{tt.keptSpoils, tt.changeBreaks, tt.baseBreaks}, func(in *pipeline.Input) {
				base = in.BaseSHA
				in.Pristine = func(ctx context.Context, dst string) error { return errors.New("the repository's objects are gone") }
			})
			out, sb := r.out, r.sb
			if out.Verdict != tt.verdict {
				t.Errorf("verdict %q, want %q (%+v)", out.Verdict, tt.verdict, out.Comparison)
			}
			if tt.verdict == verify.Unverified && (out.Comparison == nil || !strings.Contains(reasons(out.Comparison), "could not be verified again")) {
				t.Errorf("the report does not say the base is unconfirmed: %+v", out.Comparison)
			}
			if _, kept, err := r.baseline(base); err != nil || kept {
				t.Errorf("the unconfirmed baseline was kept: %v (%v)", kept, err)
			}
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if sb.starts != 2 || sb.setups != 1 || sb.closes != 2 || len(sb.forgotten) != 0 {
				t.Errorf("starts %d, setups %d, closes %d, forgotten %q: want the change verified in a second sandbox set up from scratch, the kept setup kept",
					sb.starts, sb.setups, sb.closes, sb.forgotten)
			}
		})
	}
}

func reasons(cmp *verify.Comparison) string {
	var out []string
	for _, r := range cmp.Reasons {
		out = append(out, r.Why)
	}
	return strings.Join(out, "\n")
}
