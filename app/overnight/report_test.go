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
