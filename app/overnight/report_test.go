package overnight

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
)

func TestOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state   job.State
		outcome job.Outcome
		want    string
	}{
		{job.StateSucceeded, job.OutcomePROpened, Pass},
		{job.StateSucceeded, job.OutcomePRUpdated, Pass},
		{job.StateSucceeded, job.OutcomePlanPosted, Pass},
		{job.StateSucceeded, job.OutcomeNoChange, Skipped},
		{job.StateFailed, job.OutcomeVerificationFailed, Fail},
		{job.StateFailed, job.OutcomeError, Fail},
		{job.StateFailed, job.OutcomeUnverified, Fail},
		{job.StateFailed, job.OutcomeLimitReached, Fail},
		{job.StateCanceled, "", Skipped},
		{job.StateSuperseded, "", Skipped},
	}
	for _, tt := range tests {
		if got := Outcome(&job.Job{State: tt.state, Outcome: tt.outcome}); got != tt.want {
			t.Errorf("Outcome(%s, %s) = %s, want %s", tt.state, tt.outcome, got, tt.want)
		}
	}
}

func TestFallbackNarrativeIsTwoToFiveSentences(t *testing.T) {
	t.Parallel()
	pass := Run{Repository: "o/a", Issue: 1, Outcome: Pass, PRURL: "https://github.example/o/a/pull/2"}
	fail := Run{Repository: "o/b", Issue: 3, Outcome: Fail}
	skip := Run{Repository: "o/b", Issue: 4, Outcome: Skipped, Narrative: "Not started in this window: x."}
	start := time.Date(2026, 3, 10, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		runs []Run
		want []string
	}{
		{"one pass", []Run{pass}, []string{"1 job in 1 repository", "Ready for review: o/a#1 (https://github.example/o/a/pull/2)"}},
		{"one failure", []Run{fail}, []string{"0 passed, 1 failed", "Failed: o/b#3"}},
		{"only moved", []Run{skip}, []string{"1 job moved to the next window"}},
		{"everything", []Run{pass, fail, skip}, []string{"3 jobs in 2 repositories: 1 passed, 1 failed and 1 was skipped", "moved"}},
	}
	for _, tt := range tests {
		got := FallbackNarrative(start, tt.runs)
		if !validNarrative(got) {
			t.Errorf("%s: %q is not 2-5 sentences", tt.name, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.name, got, w)
			}
		}
	}
	if validNarrative("One.") || validNarrative("A. B. C. D. E. F.") || !validNarrative("One. Two.") {
		t.Error("validNarrative bounds wrong")
	}
}

func TestWindowEndNeverPassesTheNextStart(t *testing.T) {
	t.Parallel()
	every4h, _ := cron.ParseStandard("0 */4 * * *")
	daily, _ := cron.ParseStandard("0 2 * * *")
	start := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	if got := (Windows{Schedule: daily}).End(start.Add(2 * time.Hour)); !got.Equal(start.Add(8 * time.Hour)) {
		t.Errorf("daily, default length: end %v", got)
	}
	if got := (Windows{Schedule: every4h, Length: 6 * time.Hour}).End(start); !got.Equal(start.Add(4 * time.Hour)) {
		t.Errorf("4-hourly, 6h length: end %v, want the next start", got)
	}
}

func TestDeliveryStopsOnAPermanentAnswer(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sched, _ := cron.ParseStandard("0 2 * * *")
	s, err := New(Options{Store: st, Windows: Windows{Schedule: sched}, ReportURL: srv.URL + "/hook?token=secret-token", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rep := &store.Report{Payload: []byte(`{}`)}
	if err := st.CloseWindow(context.Background(), time.Now(), rep); err != nil {
		t.Fatal(err)
	}
	if err := s.deliver(context.Background(), rep.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := st.GetReport(context.Background(), rep.ID)
	if hits.Load() != 1 || got.Delivered || got.Attempts != 1 || !strings.Contains(got.LastError, "403") {
		t.Fatalf("hits %d, report %+v", hits.Load(), got)
	}
	if strings.Contains(got.LastError, "secret-token") {
		t.Fatalf("the webhook URL leaked into the stored error: %s", got.LastError)
	}
	// An unreachable receiver is retried up to Attempts times; its error
	// does not carry the URL either.
	srv.Close()
	rep2 := &store.Report{Payload: []byte(`{}`)}
	if err := st.CloseWindow(context.Background(), time.Now().Add(time.Hour), rep2); err != nil {
		t.Fatal(err)
	}
	s.deliver(context.Background(), rep2.ID)
	got, _ = st.GetReport(context.Background(), rep2.ID)
	if got.Delivered || got.Attempts != 5 || strings.Contains(got.LastError, "secret-token") {
		t.Fatalf("report %+v", got)
	}
}

type noArtifacts struct{}

func (noArtifacts) Artifact(ctx context.Context, id, name string) ([]byte, error) {
	return nil, store.ErrNotFound
}

// TestRunCostAndLimit: each run says its tokens, its cost (null when
// unknown, never a made-up zero) and the limit it stopped at, and a run
// stopped at a limit points at its draft and at the retry that resumes it.
func TestRunCostAndLimit(t *testing.T) {
	t.Parallel()
	cost := 0.42
	start := time.Date(2026, 3, 10, 2, 0, 0, 0, time.UTC)
	base := job.Job{Repo: job.Repo{Owner: "o", Name: "r"}, Issue: 5, IssueTitle: "Fix it", StartedAt: start, FinishedAt: start.Add(45 * time.Minute)}
	tests := []struct {
		name      string
		edit      func(j *job.Job)
		wantCost  *float64
		wantLimit job.Stop
		narrative []string
	}{
		{"stopped at the daily cost budget", func(j *job.Job) {
			j.State, j.Outcome, j.Stop, j.Tokens = job.StateFailed, job.OutcomeLimitReached, job.StopDailyCost, 1200
			j.Usage, j.Publication.PRURL = &job.Usage{CostUSD: &cost}, "https://github.example/o/r/pull/6"
		}, &cost, job.StopDailyCost, []string{"Stopped at the installation's daily cost budget (SELFCODE_DAILY_COST_BUDGET) after 45m0s",
			"the draft pull request https://github.example/o/r/pull/6 holds the work so far", "/selfcode retry"}},
		{"overtime", func(j *job.Job) {
			j.State, j.Outcome, j.Stop, j.Tokens = job.StateFailed, job.OutcomeLimitReached, job.StopOvertime, 10
			j.Usage = &job.Usage{UnpricedModels: []string{"local"}}
		}, nil, job.StopOvertime, []string{"Stopped at the overnight time limit (SELFCODE_OVERNIGHT_MAX_DURATION)"}},
		{"tokens without their kinds: cost unknown", func(j *job.Job) {
			j.State, j.Outcome, j.Tokens = job.StateSucceeded, job.OutcomePROpened, 42
		}, nil, "", nil},
	}
	for _, tt := range tests {
		j := base
		tt.edit(&j)
		r := BuildRun(context.Background(), noArtifacts{}, &j, nil, time.UTC)
		if r.Tokens != j.Tokens || r.Limit != tt.wantLimit || (r.CostUSD == nil) != (tt.wantCost == nil) || (r.CostUSD != nil && *r.CostUSD != *tt.wantCost) {
			t.Errorf("%s: tokens %d limit %q cost %v", tt.name, r.Tokens, r.Limit, r.CostUSD)
		}
		for _, w := range tt.narrative {
			if !strings.Contains(r.Narrative+" "+r.NextSuggestedTarget, w) {
				t.Errorf("%s: narrative %q / next %q lacks %q", tt.name, r.Narrative, r.NextSuggestedTarget, w)
			}
		}
	}
	if r := BuildRun(context.Background(), noArtifacts{}, &job.Job{Repo: base.Repo, Issue: 1, State: job.StateCanceled}, nil, time.UTC); r.CostUSD == nil || *r.CostUSD != 0 {
		t.Errorf("a job without model use costs %v, want 0", r.CostUSD)
	}
}
