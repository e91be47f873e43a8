package server_test

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/samplerepo"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// sampleFix is the model's part of the sample one-line job on the sample
// repository with tests (internal/samplerepo): a plan, the one-line fix of
// Greet's punctuation and finish.
func sampleFix() []fakeopenai.Step {
	return []fakeopenai.Step{
		{Role: "planner", Content: `{"summary":"Greet louder","steps":[{"id":"1","title":"End the greeting with an exclamation mark","files":[{"path":"greet.go","action":"modify","purpose":"louder"}],"acceptance":["go test passes"]}],"risks":[],"questions":[]}`},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: jsonArg(map[string]string{"path": "greet.go", "old_str": samplerepo.BuggyLine, "new_str": samplerepo.FixedLine})}}},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: jsonArg(map[string]string{"summary": "louder"})}}},
	}
}

// sampleServer is selfcode between the simulated GitHub, holding the
// sample repository with its tests (so verification compiles, links and
// runs go test, as a real job does), and an instant scripted model, with
// the real pipeline (baseline cache in a temporary folder) and the real
// sandbox, for jobs sample one-line jobs.
func sampleServer(b *testing.B, sb *sandbox.Manager, jobs int) *e2e.Harness {
	b.Helper()
	var script []fakeopenai.Step
	for i := 0; i < jobs; i++ {
		script = append(script, sampleFix()...)
	}
	baselines, err := verify.NewCache(verify.CacheOptions{Dir: filepath.Join(b.TempDir(), "baselines")})
	if err != nil {
		b.Fatal(err)
	}
	_, p := modelPipeline(b, sb, baselines, script)
	return e2e.Start(b, e2e.Options{Pipeline: p,
		GitHubOptions: e2e.GitHubOptions{Repos: map[string]map[string]string{e2e.Repo: samplerepo.Files()}}})
}

// sampleJob opens an issue, comments /selfcode on it and waits for the
// pull request; it returns the time from the comment to the end and the
// finished job.
func sampleJob(b *testing.B, h *e2e.Harness) (time.Duration, *job.Job) {
	b.Helper()
	issue := h.Issue(e2e.Repo, "Greet louder")
	start := time.Now()
	code, out := h.Comment(e2e.Repo, issue, "maint", "/selfcode add an exclamation mark to the greeting")
	id, _ := out["job_id"].(string)
	if code != 202 || id == "" {
		b.Fatalf("comment: %d %v", code, out)
	}
	j := h.Wait(id)
	took := time.Since(start)
	if j.Outcome != job.OutcomePROpened { // a failed or unverified change ends otherwise
		b.Fatalf("job %s: %s %s %q\n%s", id, j.State, j.Outcome, j.Error, h.Logs())
	}
	return took, j
}

// BenchmarkSampleJob is the sample one-line job from the /selfcode comment
// to the opened pull request, with an instant scripted model (the model's
// time is not selfcode's): cold is a repository's first job (no cache
// volume, mirror or baseline), warm a later issue of the same repository.
// Besides s/job it reports each part of the job's time (median).
func BenchmarkSampleJob(b *testing.B) {
	sb := dockertest.Manager(b)
	repo := e2e.Owner + "/" + e2e.Repo
	b.Run("cold", func(b *testing.B) {
		var took []time.Duration
		var jobs []*job.Job
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if _, _, err := sb.ClearCaches(context.Background(), repo); err != nil {
				b.Fatal(err)
			}
			h := sampleServer(b, sb, 1)
			b.StartTimer()
			d, j := sampleJob(b, h)
			b.StopTimer()
			h.Stop()
			took, jobs = append(took, d), append(jobs, j)
		}
		reportJobs(b, took, jobs)
	})
	b.Run("warm", func(b *testing.B) {
		b.StopTimer()
		h := sampleServer(b, sb, b.N+1)
		sampleJob(b, h) // the repository's first job
		var took []time.Duration
		var jobs []*job.Job
		for i := 0; i < b.N; i++ {
			b.StartTimer()
			d, j := sampleJob(b, h)
			b.StopTimer()
			took, jobs = append(took, d), append(jobs, j)
		}
		reportJobs(b, took, jobs)
	})
}

// reportJobs reports the median job time and the median of each part.
func reportJobs(b *testing.B, took []time.Duration, jobs []*job.Job) {
	b.ReportMetric(median(took).Seconds(), "s/job")
	parts := map[stage.Part][]time.Duration{}
	for _, j := range jobs {
		for _, sp := range j.Time {
			parts[sp.Part] = append(parts[sp.Part], time.Duration(sp.Seconds*float64(time.Second)))
		}
	}
	for _, p := range stage.PartOrder() {
		if ds := parts[p]; len(ds) > 0 {
			b.ReportMetric(median(ds).Seconds(), string(p)+"-s")
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, c int) bool { return s[a] < s[c] })
	return s[len(s)/2]
}
