package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/report"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/samplerepo"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/prompts"
	"github.com/selfcode/selfcode/templates"
)

// sample is the repository with a real bug: Greet ends with "." but its
// doc and test say "!".
var sample = samplerepo.Files()

const goodPlan = `{"summary":"End the greeting with an exclamation mark","steps":[{"id":"1","title":"Fix the punctuation","files":[{"path":"greet.go","action":"modify","purpose":"return Hello, name!"}],"acceptance":["go test passes"]}],"risks":[],"questions":[]}`

const (
	fixOld = samplerepo.BuggyLine
	fixNew = samplerepo.FixedLine
)

// baselines is the baseline cache every test of this package shares, as
// one server's jobs do: a base commit is verified once per configuration.
var baselines *verify.Cache

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "selfcode-baselines-")
	if err != nil {
		panic(err)
	}
	if baselines, err = verify.NewCache(verify.CacheOptions{Dir: dir}); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func gitRepo(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		// Fixed dates: the same files give the same commit, so tests of one
		// repository share its baseline (see baselines).
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x",
			"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	run("add", "-A")
	run("commit", "-q", "-m", "base")
	return dir, run("rev-parse", "HEAD")
}

func call(name string, args any) fakeopenai.ToolCall {
	b, _ := json.Marshal(args)
	return fakeopenai.ToolCall{Name: name, Arguments: string(b)}
}

func editor(calls ...fakeopenai.ToolCall) fakeopenai.Step {
	return fakeopenai.Step{Role: "editor", ToolCalls: calls, PromptTokens: 100, CompletionTokens: 10}
}

func fixer(calls ...fakeopenai.ToolCall) fakeopenai.Step {
	return fakeopenai.Step{Role: "fixer", ToolCalls: calls, PromptTokens: 100, CompletionTokens: 10}
}

func planner(content string) fakeopenai.Step {
	return fakeopenai.Step{Role: "planner", Content: content, PromptTokens: 200, CompletionTokens: 50}
}

type recorder struct {
	mu     sync.Mutex
	stages []string
	arts   map[string][]byte
}

func (r *recorder) Stage(name stage.Name, status stage.Status, summary string) {
	r.mu.Lock()
	r.stages = append(r.stages, string(name)+":"+string(status))
	r.mu.Unlock()
}

func (r *recorder) Artifact(name string, data []byte) {
	r.mu.Lock()
	if r.arts == nil {
		r.arts = map[string][]byte{}
	}
	r.arts[name] = data
	r.mu.Unlock()
}

type harness struct {
	t     *testing.T
	fake  *fakeopenai.Server
	p     *pipeline.Pipeline
	sb    sandbox.Backend
	dir   string
	base  string
	prog  *recorder
	cfg   *repoconfig.Config
	files map[string]string
}

func newHarness(t *testing.T, files map[string]string, cfgYAML string, script ...fakeopenai.Step) *harness {
	t.Helper()
	return newHarnessWith(t, nil, files, cfgYAML, script...)
}

// newHarnessWith is newHarness with more pipeline options (set by opts,
// which may be nil), such as a smoke engine on the test's manager.
func newHarnessWith(t *testing.T, opts func(*pipeline.Options, *sandbox.Manager), files map[string]string, cfgYAML string, script ...fakeopenai.Step) *harness {
	t.Helper()
	m := dockertest.Manager(t)
	fake, err := fakeopenai.New(fakeopenai.Options{Script: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	client, err := llm.New(llm.Options{BaseURL: fake.URL(), APIKey: "k", Models: map[chat.Role]string{
		chat.RolePlanner: "planner", chat.RoleEditor: "editor", chat.RoleFixer: "fixer", chat.RoleReporter: "reporter"},
		MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load(prompts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	po := pipeline.Options{Model: client, Prompts: ps, Sandbox: sandbox.Backend{Manager: m}, Baseline: baselines}
	if opts != nil {
		opts(&po, m)
	}
	p, err := pipeline.New(po)
	if err != nil {
		t.Fatal(err)
	}
	cfg := repoconfig.Default()
	if cfgYAML != "" {
		if cfg, err = repoconfig.Parse([]byte(cfgYAML)); err != nil {
			t.Fatal(err)
		}
	}
	dir, base := gitRepo(t, files)
	return &harness{t: t, fake: fake, p: p, sb: sandbox.Backend{Manager: m}, dir: dir, base: base, prog: &recorder{}, cfg: cfg, files: files}
}

func (h *harness) run(mod ...func(*pipeline.Input)) (*pipeline.Output, error) {
	in := pipeline.Input{JobID: "01jtest", Repository: "o/greeter", Issue: 1, IssueTitle: "Greeting punctuation",
		IssueBody: "Greet should end with !", Dir: h.dir, BaseSHA: h.base, Config: h.cfg, Progress: h.prog,
		Pristine: func(ctx context.Context, dst string) error {
			return gitops.ExportLocal(ctx, filepath.Join(h.dir, ".git"), h.base, dst)
		}}
	for _, f := range mod {
		f(&in)
	}
	return h.p.Run(context.Background(), in)
}

// baselineKey is the key of repo's baseline of h's base commit, verified
// with h's configuration, in the baseline cache.
func (h *harness) baselineKey(repo string) verify.Key {
	h.t.Helper()
	id, err := h.sb.ImageID(context.Background(), h.cfg.Image)
	if err != nil {
		h.t.Fatal(err)
	}
	return verify.Key{Repository: repo, SHA: h.base, Config: pipeline.BaselineHash(h.cfg, h.dir), Image: id}
}

func (h *harness) file(p string) string {
	b, _ := os.ReadFile(filepath.Join(h.dir, p))
	return string(b)
}

// toolResults returns the tool messages the model was sent, in order.
func (h *harness) toolResults() []string {
	var out []string
	reqs := h.fake.Requests()
	if len(reqs) == 0 {
		return nil
	}
	var last struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	for _, r := range reqs {
		var b struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(r.Raw, &b) == nil && len(b.Messages) > len(last.Messages) {
			last = b
		}
	}
	for _, m := range last.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

const fastVerify = `
verify:
  - {name: check, run: "grep -q 'name + \"!\"' greet.go"}
`

func TestHappyPath(t *testing.T) {
	h := newHarness(t, sample, "",
		planner(goodPlan),
		editor(call("view", map[string]any{"path": "greet.go"})),
		editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": fixOld, "new_str": fixNew})),
		editor(call("finish", map[string]any{"summary": "Greet ends with !"})),
	)
	out, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || out.FixAttempts != 0 || len(out.Changed) != 1 || out.Changed[0] != "greet.go" {
		t.Fatalf("verified=%v fixes=%d changed=%v stop=%q", out.Verified, out.FixAttempts, out.Changed, out.StopReason)
	}
	if out.Plan == nil || out.Plan.Summary == "" || out.Summary != "Greet ends with !" {
		t.Fatalf("plan %+v summary %q", out.Plan, out.Summary)
	}
	// Inferred Go commands ran; the test failed on the base and passes now.
	if out.Base == nil || out.Base.Passed || out.Comparison == nil || len(out.Comparison.Fixed) == 0 {
		t.Fatalf("base %+v comparison %+v", out.Base, out.Comparison)
	}
	var rep templates.Report
	report.Fill(&rep, out, h.cfg)
	if len(rep.Verification) != 3 || !rep.Verification[2].Passed || rep.Tokens.Total == 0 || rep.Tokens.ByPhase["planner"] == 0 {
		t.Fatalf("report rows %+v tokens %+v", rep.Verification, rep.Tokens)
	}
	for _, a := range []string{"plan.json", "transcript.json", "verify-base.json", "verify-0.json"} {
		if h.prog.arts[a] == nil {
			t.Fatalf("artifact %s missing (have %v)", a, keys(h.prog.arts))
		}
	}
	// The planner asked for the plan schema.
	var planReq map[string]any
	json.Unmarshal(h.fake.RequestsFor("planner")[0].Raw, &planReq)
	rf, _ := planReq["response_format"].(map[string]any)
	if rf["type"] != "json_schema" || rf["json_schema"].(map[string]any)["name"] != "plan" {
		t.Fatalf("planner response_format %v", planReq["response_format"])
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRecoveryFromBadModelOutput(t *testing.T) {
	files := map[string]string{}
	for k, v := range sample {
		files[k] = v
	}
	files[".github/workflows/ci.yml"] = "name: ci\n"
	files["two.txt"] = "same\nsame\n"
	h := newHarness(t, files, fastVerify+"paths: {protected: [\"go.mod\"]}\n",
		planner(`{"summary": "oops"`), // malformed JSON
		planner(goodPlan),
		editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": "return \"Goodbye\"", "new_str": "x"})),
		editor(call("str_replace", map[string]any{"path": "two.txt", "old_str": "same", "new_str": "other"})),
		editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": fixOld, "new_str": "\treturn \"Hello, \" + name + \"!\"\n}}}"})),
		editor(call("create", map[string]any{"path": "../outside.txt", "content": "x"})),
		editor(call("view", map[string]any{"path": "escape/passwd"})),
		editor(call("str_replace", map[string]any{"path": ".github/workflows/ci.yml", "old_str": "name: ci", "new_str": "name: pwned"})),
		editor(call("delete", map[string]any{"path": "go.mod"})),
		editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": fixOld, "new_str": fixNew})),
		editor(call("finish", map[string]any{"summary": "fixed"})),
	)
	if err := os.Symlink("/etc", filepath.Join(h.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, p := range []string{"two.txt", ".github/workflows/ci.yml", "go.mod"} {
		before[p] = h.file(p)
	}
	out, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	plans := h.fake.RequestsFor("planner")
	if len(plans) != 2 || !strings.Contains(string(plans[1].Raw), "not a valid plan") {
		t.Fatalf("malformed plan JSON was not answered with the validation error (%d planner calls)", len(plans))
	}
	// Eight tool results reach the model (finish ends the conversation).
	results := h.toolResults()
	if len(results) != 8 {
		t.Fatalf("%d tool results: %q", len(results), results)
	}
	for i := 0; i < 7; i++ {
		if !strings.HasPrefix(results[i], "ERROR:") {
			t.Fatalf("tool result %d should be an error: %q", i, results[i])
		}
	}
	if !strings.Contains(results[1], "line") {
		t.Fatalf("two matches should list line numbers: %q", results[1])
	}
	for p, c := range before {
		if h.file(p) != c {
			t.Fatalf("%s was changed by a refused edit", p)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(h.dir), "outside.txt")); err == nil {
		t.Fatal("a file was written outside the checkout")
	}
	if !out.Verified || len(out.Changed) != 1 {
		t.Fatalf("verified %v changed %v", out.Verified, out.Changed)
	}
	// The syntax-breaking edit never reached verification: only one round ran.
	if len(out.Verify) != 1 {
		t.Fatalf("%d verify rounds", len(out.Verify))
	}
}

func TestFixLoop(t *testing.T) {
	broken := `	return "Hello, " + name + "!" + undefinedThing`
	t.Run("compiler error fixed on attempt 2", func(t *testing.T) {
		h := newHarness(t, sample, "",
			planner(goodPlan),
			editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": fixOld, "new_str": broken})),
			editor(call("finish", map[string]any{"summary": "done"})),
			fixer(call("str_replace", map[string]any{"path": "greet.go", "old_str": broken, "new_str": fixNew})),
			fixer(call("finish", map[string]any{"summary": "removed the undefined name"})),
		)
		out, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		if !out.Verified || out.FixAttempts != 1 || len(out.Verify) != 2 {
			t.Fatalf("verified %v fixes %d rounds %d", out.Verified, out.FixAttempts, len(out.Verify))
		}
		fixReq := h.fake.RequestsFor("fixer")[0]
		if !strings.Contains(string(fixReq.Raw), fmt.Sprintf("greet.go:%d", samplerepo.BuggyLineNumber)) || !strings.Contains(string(fixReq.Raw), "undefinedThing") {
			t.Fatalf("fixer's first message lacks the compiler error:\n%s", fixReq.Raw)
		}
	})
	t.Run("fix budget exhausted", func(t *testing.T) {
		h := newHarness(t, sample, "limits: {max_fix_attempts: 1}\n",
			planner(goodPlan),
			editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": fixOld, "new_str": broken})),
			editor(call("finish", map[string]any{"summary": "done"})),
			fixer(call("finish", map[string]any{"summary": "gave up"})),
		)
		out, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		if out.Verified || out.FixAttempts != 1 {
			t.Fatalf("verified %v fixes %d", out.Verified, out.FixAttempts)
		}
		var rep templates.Report
		report.Fill(&rep, out, h.cfg)
		if !strings.Contains(rep.Logs, "undefinedThing") {
			t.Fatalf("failure report lacks the error:\n%s", rep.Logs)
		}
	})
	t.Run("pre-existing failure is not blamed, a regression is", func(t *testing.T) {
		files := map[string]string{}
		for k, v := range sample {
			files[k] = v
		}
		files["other_test.go"] = "package greeter\n\nimport \"testing\"\n\nfunc TestAlreadyBroken(t *testing.T) { t.Fatal(\"broken on main\") }\n"
		h := newHarness(t, files, "",
			planner(goodPlan),
			editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": fixOld, "new_str": fixNew})),
			editor(call("finish", map[string]any{"summary": "done"})),
		)
		out, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		if !out.Verified || len(out.Comparison.PreExisting) == 0 {
			t.Fatalf("verified %v comparison %+v", out.Verified, out.Comparison)
		}
		var rep templates.Report
		report.Fill(&rep, out, h.cfg)
		if !strings.Contains(rep.Verification[2].Baseline, "also failed") {
			t.Fatalf("report does not say the failure is pre-existing: %+v", rep.Verification)
		}

		h2 := newHarness(t, sample, "limits: {max_fix_attempts: 0}\n",
			planner(goodPlan),
			editor(call("create", map[string]any{"path": "new_test.go", "content": "package greeter\n\nimport \"testing\"\n\nfunc TestNew(t *testing.T) { t.Fatal(\"regression\") }\n"})),
			editor(call("str_replace", map[string]any{"path": "greet.go", "old_str": fixOld, "new_str": fixNew})),
			editor(call("finish", map[string]any{"summary": "done"})),
		)
		out, err = h2.run()
		if err != nil {
			t.Fatal(err)
		}
		if out.Verified || len(out.Comparison.Regressions) == 0 {
			t.Fatalf("regression not caught: %+v", out.Comparison)
		}
	})
}

func TestBudgets(t *testing.T) {
	t.Run("max_steps", func(t *testing.T) {
		var steps []fakeopenai.Step
		steps = append(steps, planner(goodPlan))
		for i := 0; i < 5; i++ {
			steps = append(steps, editor(call("view", map[string]any{"path": "greet.go"})))
		}
		h := newHarness(t, sample, fastVerify+"limits: {max_steps: 3}\n", steps...)
		out, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		if out.StopReason != pipeline.StopMaxSteps || out.Steps != 3 {
			t.Fatalf("stop %q steps %d", out.StopReason, out.Steps)
		}
	})
	t.Run("max_tokens", func(t *testing.T) {
		var steps []fakeopenai.Step
		steps = append(steps, fakeopenai.Step{Role: "planner", Content: goodPlan, PromptTokens: 900, CompletionTokens: 50})
		for i := 0; i < 5; i++ {
			steps = append(steps, fakeopenai.Step{Role: "editor", ToolCalls: []fakeopenai.ToolCall{call("view", map[string]any{"path": "greet.go"})}, PromptTokens: 900, CompletionTokens: 50})
		}
		h := newHarness(t, sample, fastVerify+"limits: {max_tokens: 2500}\n", steps...)
		out, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		if out.Budget == nil || out.Budget.Limit != chat.LimitJobTokens || !strings.Contains(out.StopReason, "of 2500 tokens used") || out.Tokens < 2500 || out.Tokens > 2500+950 {
			t.Fatalf("stop %q tokens %d", out.StopReason, out.Tokens)
		}
	})
}

func TestJobTimeoutStopsCleanly(t *testing.T) {
	// The planner answers after 30 s; the job's wall clock is 2 s.
	slow := planner(goodPlan)
	slow.Delay = fakeopenai.Duration(30 * time.Second)
	h := newHarness(t, sample, fastVerify+"limits: {job_timeout: 2s}\n", slow)
	out, err := h.run() // the planner's 30 s answer never arrives: the 2 s limit ends the job
	if err == nil || out == nil || out.StopReason != pipeline.StopTimeout {
		t.Fatalf("err %v stop %q", err, func() string {
			if out == nil {
				return "<no output>"
			}
			return out.StopReason
		}())
	}
	if !strings.Contains(err.Error(), pipeline.StopTimeout) {
		t.Fatalf("error %q", err)
	}
}
