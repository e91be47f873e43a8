package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/poll"
)

// The two cases issue 12 opened with, through `selfcode serve`, the
// simulated GitHub, the scripted model and the real sandbox: a Go module
// whose requirement cannot be fetched ends unverified, and a regression
// hidden behind a `make test` that fails on the base too ends failed.

const ghOwner, ghRepo = e2e.Owner, e2e.Repo

// emptyGoProxy serves a Go module proxy on the Docker bridge that knows
// no module, and counts the requests it answered.
func emptyGoProxy(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var asked atomic.Int64
	url := dockertest.ServeOnBridge(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
	}))
	return url, &asked
}

type serveCase struct {
	gh      *fakegithub.Server
	model   *fakeopenai.Server
	proc    *proc
	comment int64
	data    string // SELFCODE_DATA_DIR
}

// serveWith starts the simulated GitHub with files in the repository, the
// scripted model, and `selfcode serve` pointed at both.
func serveWith(t *testing.T, files map[string]string, script []fakeopenai.Step, env ...string) *serveCase {
	t.Helper()
	gh := e2e.GitHub(t, e2e.GitHubOptions{Repos: map[string]map[string]string{ghRepo: files}, Users: map[string]string{"maint": "maintain"}})
	model, err := fakeopenai.New(fakeopenai.Options{Script: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	data := t.TempDir()
	p := launch(t, []string{"serve"}, append(append(append(e2e.Env(t, gh, data),
		"PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"),
		"SELFCODE_LLM_BASE_URL="+model.URL(), "SELFCODE_LLM_API_KEY=test",
		"SELFCODE_LLM_MODEL_PLANNER=planner", "SELFCODE_LLM_MODEL_EDITOR=editor", "SELFCODE_LLM_MODEL_FIXER=fixer", "SELFCODE_LLM_MODEL_REPORTER=reporter",
	), dockerEnv()...), env...), "")
	return &serveCase{gh: gh, model: model, proc: p, data: filepath.Join(data, "data")} // as e2e.Env sets it
}

// trigger opens issue 1 and comments the command on it as a maintainer.
func (c *serveCase) trigger(t *testing.T, text string) {
	t.Helper()
	if _, err := c.gh.AddIssue(ghOwner, ghRepo, fakegithub.Issue{Number: 1, Title: "Fix it", Body: "Please fix it.", User: "maint"}); err != nil {
		t.Fatal(err)
	}
	cm, err := c.gh.AddIssueComment(ghOwner, ghRepo, 1, "maint", text)
	if err != nil {
		t.Fatal(err)
	}
	c.comment = cm.ID
	body := e2e.CommentPayload(ghRepo, 1, cm.ID, "maint", text)
	code, _, err := c.proc.deliver("issue_comment", fmt.Sprint("d-", cm.ID), body)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("deliver: %d %v\n%s", code, err, c.proc.logText())
	}
}

// finished waits (bounded) for the one job to end and returns it.
func (c *serveCase) finished(t *testing.T) apiJob {
	t.Helper()
	var j apiJob
	poll.Until(t, "the job to finish", 4*time.Minute, func() bool {
		jobs := c.proc.allJobs(t)
		if len(jobs) == 1 && (jobs[0].State == "succeeded" || jobs[0].State == "failed" || jobs[0].State == "canceled") {
			j = jobs[0]
			return true
		}
		return false
	})
	return j
}

// published checks the check run's conclusion, the PR's draft state, the
// reaction and the report's first sentence.
func (c *serveCase) published(t *testing.T, conclusion string, draft bool, reaction, firstSentence string) {
	t.Helper()
	runs := c.gh.CheckRuns(ghOwner, ghRepo)
	if len(runs) == 0 || runs[len(runs)-1].Conclusion != conclusion {
		t.Errorf("check runs %+v, want the last concluded %q", runs, conclusion)
	}
	prs := c.gh.PullRequests(ghOwner, ghRepo)
	if len(prs) != 1 || prs[0].Draft != draft {
		t.Fatalf("pull requests %+v, want one with draft=%v", prs, draft)
	}
	if !strings.Contains(prs[0].Body, firstSentence) {
		t.Errorf("PR body lacks %q:\n%s", firstSentence, prs[0].Body)
	}
	got := map[string]bool{}
	for _, r := range c.gh.Reactions(fakegithub.SubjectIssueComment, c.comment) {
		got[r.Content] = true
	}
	if !got[reaction] || got["rocket"] && reaction != "rocket" {
		t.Errorf("reactions %v, want %q", got, reaction)
	}
}

func arg(v any) string { b, _ := json.Marshal(v); return string(b) }

func editorSteps(path, old, new string) []fakeopenai.Step {
	return []fakeopenai.Step{
		{Role: "planner", Content: `{"summary":"Fix it","steps":[{"id":"1","title":"Fix","files":[{"path":"` + path + `","action":"modify","purpose":"fix"}],"acceptance":["tests pass"]}],"risks":[],"questions":[]}`},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: arg(map[string]string{"path": path, "old_str": old, "new_str": new})}}},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: arg(map[string]string{"summary": "fixed"})}}},
	}
}

func TestServeUnfetchableModuleIsUnverified(t *testing.T) {
	t.Parallel()
	dockertest.Manager(t)
	proxy, asked := emptyGoProxy(t)
	files := map[string]string{
		"go.mod":      "module example.com/app\n\ngo 1.22\n\nrequire example.com/words v1.0.0\n",
		"app.go":      "package app\n\nimport \"example.com/words\"\n\n// Word is the first word.\nfunc Word() string { return words.First() }\n",
		"app_test.go": "package app\n\nimport \"testing\"\n\nfunc TestWord(t *testing.T) {\n\tif Word() == \"\" {\n\t\tt.Fatal(\"empty\")\n\t}\n}\n",
	}
	c := serveWith(t, files, editorSteps("app.go", "// Word is the first word.", "// Word returns the first word."),
		"SELFCODE_SANDBOX_ENV=GOPROXY="+proxy+";GOSUMDB=off")
	c.trigger(t, "/selfcode reword the comment")
	j := c.finished(t)
	if j.Outcome != "unverified" {
		t.Fatalf("job %+v, want outcome unverified\n%s", j, c.proc.logText())
	}
	if asked.Load() == 0 {
		t.Error("setup never asked the module proxy for example.com/words")
	}
	c.published(t, "neutral", true, "confused", "this change could not be verified")
	pr := c.gh.PullRequests(ghOwner, ghRepo)[0]
	for _, want := range []string{"go mod download", "example.com/words"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the report does not say why (%q):\n%s", want, pr.Body)
		}
	}
}

func TestServeHiddenRegressionFails(t *testing.T) {
	t.Parallel()
	dockertest.Manager(t)
	files := map[string]string{
		".selfcode.yml": "verify:\n  - {name: test, run: make test}\nlimits: {max_fix_attempts: 1}\n",
		"Makefile":      "test:\n\tgo test ./...\n",
		"go.mod":        "module example.com/calc\n\ngo 1.22\n",
		"calc.go":       "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }\n",
		"calc_test.go":  "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n\nfunc TestSub(t *testing.T) {\n\tif got := Sub(5, 3); got != 2 {\n\t\tt.Errorf(\"Sub(5, 3) = %d, want 2\", got)\n\t}\n}\n",
	}
	script := append(editorSteps("calc.go",
		"func Add(a, b int) int { return a - b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }",
		"func Add(a, b int) int { return a + b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a + b }"),
		fakeopenai.Step{Role: "fixer", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: arg(map[string]string{"summary": "could not fix"})}}})
	c := serveWith(t, files, script)
	c.trigger(t, "/selfcode fix Add")
	j := c.finished(t)
	if j.Outcome != "verification_failed" {
		t.Fatalf("job %+v, want outcome verification_failed\n%s", j, c.proc.logText())
	}
	c.published(t, "failure", true, "confused", "TestSub")
	// Where the time went, and the repository's cache, as the server reports them.
	parts := map[string]bool{}
	for _, sp := range j.Time {
		parts[sp.Part] = true
	}
	for _, p := range []string{"queue", "checkout", "sandbox_start", "baseline", "model", "verify", "publish"} {
		if !parts[p] {
			t.Errorf("the job's time lacks %s: %+v", p, j.Time)
		}
	}
	resp, err := client.Get("http://" + c.proc.admin + "/api/caches")
	if err != nil {
		t.Fatal(err)
	}
	var caches struct{ Caches []struct{ Repository string } }
	err = json.NewDecoder(resp.Body).Decode(&caches)
	resp.Body.Close()
	found := false
	for _, ci := range caches.Caches {
		found = found || ci.Repository == ghOwner+"/"+ghRepo
	}
	if err != nil || resp.StatusCode != http.StatusOK || !found {
		t.Errorf("GET /api/caches: %d %+v %v, want %s/%s listed", resp.StatusCode, caches, err, ghOwner, ghRepo)
	}
	// The dashboard's clear takes the repository's baselines with its cache.
	baselines := func() []string {
		names, _ := filepath.Glob(filepath.Join(c.data, "baselines", "v*", "*", "*.json"))
		return names
	}
	if len(baselines()) == 0 {
		t.Error("the job kept no baseline")
	}
	resp, err = client.Post("http://"+c.proc.admin+"/api/caches/clear", "application/json", strings.NewReader(`{"repo": "`+ghOwner+"/"+ghRepo+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if left := baselines(); resp.StatusCode != http.StatusOK || len(left) > 0 {
		t.Errorf("POST /api/caches/clear: %d, baselines left %q", resp.StatusCode, left)
	}
	// The fixer was told which test broke and how.
	reqs := c.model.RequestsFor("fixer")
	if len(reqs) == 0 || !strings.Contains(string(reqs[0].Raw), "TestSub") || !strings.Contains(string(reqs[0].Raw), "Sub(5, 3) = 8, want 2") {
		t.Errorf("the fixer's request lacks the failing test and its output (%d requests)", len(reqs))
	}
}
