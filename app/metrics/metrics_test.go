package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/pipeline/stage"
)

func TestCountersReachTheHandler(t *testing.T) {
	m := New(Options{})
	m.Delivery("issue_comment", "accepted", 3*time.Millisecond)
	m.Edit("str_replace", "no_match")
	m.Verify("regression", 2)
	m.Tokens("planner", 1200)
	m.Cost("gpt-4.1", 0.25, true)
	m.Cost("gpt-4.1", 0.5, true)
	m.Cost("my-model", 0, false)
	cost := 0.42
	m.JobFinished(&job.Job{Kind: job.KindRun, State: job.StateFailed, Outcome: job.OutcomeLimitReached, Usage: &job.Usage{}}) // cost unknown: not observed
	m.SandboxReaped("container", "job_ended")
	start := time.Now().Add(-2 * time.Second)
	m.JobFinished(&job.Job{Kind: job.KindRun, State: job.StateSucceeded, Outcome: job.OutcomePROpened, CreatedAt: start.Add(-time.Second),
		Usage:     &job.Usage{CostUSD: &cost},
		StartedAt: start, FinishedAt: start.Add(time.Second),
		Stages: []job.Stage{{Name: stage.Checkout, StartedAt: start, FinishedAt: start.Add(300 * time.Millisecond)}, {Name: stage.Plan, StartedAt: start}}})
	scrapeHas(t, m,
		`selfcode_webhook_deliveries_total{event="issue_comment",result="accepted"} 1`,
		`selfcode_edit_results_total{result="no_match",tool="str_replace"} 1`,
		`selfcode_verify_classifications_total{class="regression"} 2`,
		`selfcode_model_tokens_total{phase="planner"} 1200`,
		`selfcode_sandbox_reaped_total{kind="container",reason="job_ended"} 1`,
		`selfcode_job_duration_seconds_count{kind="run",outcome="pr_opened",state="succeeded"} 1`,
		`selfcode_stage_duration_seconds_bucket{stage="checkout",le="0.5"} 1`,
		`selfcode_job_queue_wait_seconds_bucket{le="1"} 1`,
		`selfcode_model_cost_dollars_total{model="gpt-4.1"} 0.75`,
		`selfcode_model_calls_unpriced_total{model="my-model"} 1`,
		`selfcode_job_cost_dollars_bucket{le="0.25"} 0`,
		`selfcode_job_cost_dollars_bucket{le="0.5"} 1`,
		`selfcode_job_cost_dollars_count 1`,
		`selfcode_jobs_finished_total{kind="run",outcome="limit_reached",state="failed"} 1`,
	)
}

// scrapeHas scrapes m's handler and fails t unless the text holds every
// want; it returns the text.
func scrapeHas(t *testing.T, m *Metrics, want ...string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Errorf("metrics lack %s", w)
		}
	}
	return string(body)
}

// A finished job's time, part by part (sandbox start, setup, baseline,
// model: inside its stages), is on /metrics beside the stages; the parts
// that are stages (checkout) or have their own histogram (queue) are not
// counted twice.
func TestPartsOfAJobsTimeReachTheHandler(t *testing.T) {
	m := New(Options{})
	m.JobFinished(&job.Job{Kind: job.KindRun, State: job.StateSucceeded, Outcome: job.OutcomePROpened, Time: []stage.Span{
		{Part: stage.PartQueue, Seconds: 0.2}, {Part: stage.PartCheckout, Seconds: 0.3}, {Part: stage.PartSandboxStart, Seconds: 1.5},
		{Part: stage.PartSetup, Seconds: 4}, {Part: stage.PartBaseline, Seconds: 3}, {Part: stage.PartModel, Seconds: 30},
	}})
	body := scrapeHas(t, m,
		`selfcode_stage_duration_seconds_bucket{stage="sandbox_start",le="1"} 0`,
		`selfcode_stage_duration_seconds_bucket{stage="sandbox_start",le="2"} 1`,
		`selfcode_stage_duration_seconds_sum{stage="sandbox_start"} 1.5`,
		`selfcode_stage_duration_seconds_sum{stage="setup"} 4`,
		`selfcode_stage_duration_seconds_sum{stage="baseline"} 3`,
		`selfcode_stage_duration_seconds_sum{stage="model"} 30`,
		`selfcode_stage_duration_seconds_count{stage="model"} 1`,
	)
	for _, never := range []string{`stage="queue"`, `stage="checkout"`} {
		if strings.Contains(body, never) {
			t.Errorf("metrics count a part that is not inside the stages: %s", never)
		}
	}
}
