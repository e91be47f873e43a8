package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
)

// The three models of contract section 10's tests, run on the history
// testdata/history.sh builds, through the real pipeline and sandbox: one
// that replays each commit's real source change, one that changes
// nothing, one that breaks a test that passed.

// evalRepo names the test repository's warm sandbox caches: fixed, so
// its Go build cache stays warm from one run of the tests to the next.
const evalRepo = "selfcode-test/eval-calc"

// baselines is the data folder whose baseline cache every test shares, as
// one server's jobs do: the history is the same commits in every test, so
// a base is checked once (with and without its held-back tests).
var baselines string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "selfcode-eval-baselines-")
	if err != nil {
		panic(err)
	}
	baselines = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type harness struct {
	t     *testing.T
	repo  string
	m     *sandbox.Manager
	store string // the test's own kept results
}

func newHarness(t *testing.T) *harness {
	m := dockertest.Manager(t)
	return &harness{t: t, repo: history(t), m: m, store: t.TempDir()}
}

// model is a scripted model: respond answers each request by its role.
type model struct {
	name    string
	respond func(role string, req fakeopenai.Request) fakeopenai.Step
	fake    *fakeopenai.Server
}

// run evaluates with the model; the harness keeps results across its
// runs.
func (h *harness) run(mdl *model, mod func(*Options)) (*Report, string) {
	t := h.t
	t.Helper()
	roles := map[chat.Role]string{}
	fakeRoles := map[string]string{}
	for _, r := range []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer, chat.RoleReporter} {
		roles[r] = mdl.name + "-" + string(r)
		fakeRoles[roles[r]] = string(r)
	}
	fake, err := fakeopenai.New(fakeopenai.Options{Roles: fakeRoles, Responder: func(req fakeopenai.Request) fakeopenai.Step {
		st := mdl.respond(req.Role, req)
		st.PromptTokens, st.CompletionTokens = 100, 10
		return st
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	mdl.fake = fake
	client, err := llm.New(llm.Options{BaseURL: fake.URL(), APIKey: "k", Models: roles, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = baselines
	log := slog.New(slog.DiscardHandler)
	var progress bytes.Buffer
	o := Options{RepoDir: h.repo, Workers: 2, Repository: evalRepo, Model: client, Models: roles,
		Pipeline: func(m chat.Model) (*pipeline.Pipeline, error) {
			return server.Pipeline(server.PipelineOptions{Config: cfg, Logger: log, Sandbox: h.m, Model: m})
		},
		StoreDir: h.store, IssuesNote: "no GitHub remote", Progress: &progress, Logger: log}
	if mod != nil {
		mod(&o)
	}
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rep, progress.String()
}

// messagesText is everything a request sent the model: messages and the
// arguments of earlier tool calls.
func messagesText(req fakeopenai.Request) string {
	var b strings.Builder
	for _, m := range req.Body.Messages {
		b.WriteString(string(m.Content))
		b.WriteString("\n")
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Arguments)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// issues is an IssueSource of fixed issues.
type issues map[int]Issue

func (is issues) Issue(ctx context.Context, n int) (Issue, error) {
	if i, ok := is[n]; ok {
		return i, nil
	}
	return Issue{}, fmt.Errorf("issue %d: not found", n)
}

func hasToolResult(req fakeopenai.Request) bool {
	return slices.ContainsFunc(req.Body.Messages, func(m fakeopenai.Message) bool { return m.Role == "tool" })
}

func toolCall(name string, args map[string]string) fakeopenai.ToolCall {
	b, _ := json.Marshal(args)
	return fakeopenai.ToolCall{Name: name, Arguments: string(b)}
}

func plan(file string) fakeopenai.Step {
	return fakeopenai.Step{Content: `{"summary":"Fix it","steps":[{"id":"1","title":"Fix it","files":[{"path":"` + file +
		`","action":"modify","purpose":"the fix"}],"acceptance":["the tests pass"]}],"risks":[],"questions":[]}`}
}

func finish(summary string) fakeopenai.Step {
	return fakeopenai.Step{ToolCalls: []fakeopenai.ToolCall{toolCall("finish", map[string]string{"summary": summary})}}
}

// replayer replays, for the task whose subject its prompt holds, every
// change the commit made outside its tests.
func replayer(t *testing.T, repo string) *model {
	ctx := context.Background()
	cands, err := Candidates(ctx, repo, 20)
	if err != nil {
		t.Fatal(err)
	}
	type fix struct {
		subject string
		files   []string
		calls   []fakeopenai.ToolCall
	}
	var fixes []fix
	for _, c := range cands {
		msg, err := message(ctx, repo, c.Commit)
		if err != nil {
			t.Fatal(err)
		}
		f := fix{subject: firstLine(msg)}
		names, err := gitLine(ctx, repo, "diff", "--name-only", "--no-renames", c.Base, c.Commit)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range strings.Fields(names) {
			if IsTestPath(p) {
				continue
			}
			old, oerr := git(ctx, repo, "show", c.Base+":"+p)
			now, nerr := git(ctx, repo, "show", c.Commit+":"+p)
			switch {
			case oerr != nil:
				f.calls = append(f.calls, toolCall("create", map[string]string{"path": p, "content": string(now)}))
			case nerr != nil:
				f.calls = append(f.calls, toolCall("delete", map[string]string{"path": p}))
			default:
				f.calls = append(f.calls, toolCall("str_replace", map[string]string{"path": p, "old_str": string(old), "new_str": string(now)}))
			}
			f.files = append(f.files, p)
		}
		fixes = append(fixes, f)
	}
	find := func(req fakeopenai.Request) fix {
		text := messagesText(req)
		for _, f := range fixes {
			if strings.Contains(text, f.subject) {
				return f
			}
		}
		t.Errorf("a request for no known task:\n%.500s", text)
		return fix{files: []string{"calc.go"}}
	}
	return &model{name: "replay", respond: func(role string, req fakeopenai.Request) fakeopenai.Step {
		f := find(req)
		switch {
		case role == "planner":
			return plan(f.files[0])
		case role == "editor" && !hasToolResult(req):
			return fakeopenai.Step{ToolCalls: f.calls}
		}
		return finish("replayed the commit's change")
	}}
}

// idler plans, then changes nothing.
func idler() *model {
	return &model{name: "idle", respond: func(role string, req fakeopenai.Request) fakeopenai.Step {
		if role == "planner" {
			return plan("calc.go")
		}
		return finish("nothing to change")
	}}
}

// breaker adds Mul, as the newest task asks, and makes Sub subtract the
// wrong way round, which TestSub and TestSubBelowZero catch; it cannot
// fix that.
func breaker() *model {
	return &model{name: "breaker", respond: func(role string, req fakeopenai.Request) fakeopenai.Step {
		switch {
		case role == "planner":
			return plan("calc.go")
		case role == "editor" && !hasToolResult(req):
			return fakeopenai.Step{ToolCalls: []fakeopenai.ToolCall{toolCall("str_replace", map[string]string{"path": "calc.go",
				"old_str": "func Sub(a, b int) int { return a - b }",
				"new_str": "func Sub(a, b int) int { return b - a }\n\n// Mul returns a times b.\nfunc Mul(a, b int) int { return a * b }"})}}
		}
		return finish("done")
	}}
}

// statuses lists "commit status verdict" per task.
func statuses(rep *Report) []string {
	var out []string
	for _, t := range rep.Tasks {
		out = append(out, fmt.Sprintf("%s %s %s", short(t.Commit), t.Status, t.Verdict))
	}
	return out
}

var testFunc = regexp.MustCompile(`^func (Test\w+)\(`)

func TestReplayedFixesAreAllResolvedAndVerified(t *testing.T) {
	h := newHarness(t)
	mdl := replayer(t, h.repo)
	issue := Issue{Number: 1, Title: "Adding a negative number does nothing", Body: "Add(7, -2) gives 7 instead of 5."}
	rep, progress := h.run(mdl, func(o *Options) { o.Issues = issues{1: issue} })
	want := []string{
		short(commitMul) + " resolved verified",
		commitReverse + " resolved verified",
		commitAdd + " resolved verified",
		commitDoc + " skipped ",
		commitNeg + " env_error ",
	}
	if got := statuses(rep); !slices.Equal(got, want) {
		t.Errorf("tasks:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), dump(rep))
	}
	fixed := map[string][]string{
		commitMul[:7]: {"TestMulForReportTotals (example.com/calc)"},
		commitReverse: {"TestReverse (example.com/calc/text)"},
		commitAdd:     {"TestAddWithNegativeOperand (example.com/calc)"},
	}
	for _, tk := range rep.Tasks[:3] {
		if !slices.Equal(tk.Fixed, fixed[short(tk.Commit)]) || len(tk.Broken) != 0 || tk.Agrees == nil || !*tk.Agrees {
			t.Errorf("%s: fixed %q broken %q agrees %v", short(tk.Commit), tk.Fixed, tk.Broken, tk.Agrees)
		}
		if tk.Tokens == 0 || tk.EditCalls < 2 || tk.EditErrors != 0 || tk.CostUSD != nil || tk.Usage["replay-editor"].Input == 0 {
			t.Errorf("%s: tokens %d, edit calls %d (%d errors), cost %v, usage %+v", short(tk.Commit), tk.Tokens, tk.EditCalls, tk.EditErrors, tk.CostUSD, tk.Usage)
		}
	}
	if r := rep.Tasks[4].Reason; !strings.Contains(r, "setup step `exit 3` failed on the base") {
		t.Errorf("the environment error says %q", r)
	}
	if r := rep.Tasks[3].Reason; !strings.Contains(r, "do not fail on the base") {
		t.Errorf("the skip says %q", r)
	}
	s := rep.Summary
	if s.Graded != 3 || s.Resolved != 3 || *s.ResolvedRate != 1 || *s.Agreement != 1 || s.Skipped != 1 || s.EnvErrors != 1 ||
		s.Errors != 0 || s.CostUSD != nil || s.EditErrorRate == nil || *s.EditErrorRate != 0 {
		t.Errorf("summary %+v", s)
	}

	// The held-back tests never reached the model: no line a commit added
	// to its tests, and no test it named, is in any request of its task
	// (older commits' tests are in newer bases, rightly). The tasks that
	// were not graded never called the model.
	ctx := context.Background()
	reqs := mdl.fake.Requests()
	for _, tk := range rep.Tasks {
		var asked strings.Builder
		for _, r := range reqs {
			if text := messagesText(r); strings.Contains(text, tk.Subject) {
				asked.WriteString(text)
			}
		}
		if asked.Len() == 0 && tk.Graded() || asked.Len() > 0 && !tk.Graded() {
			t.Errorf("%s (%s): %d bytes of requests", short(tk.Commit), tk.Status, asked.Len())
		}
		diff, err := gitLine(ctx, h.repo, "diff", tk.Base, tk.Commit, "--", "*_test.go")
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, l := range strings.Split(diff, "\n") {
			added := strings.TrimSpace(strings.TrimPrefix(l, "+"))
			if !strings.HasPrefix(l, "+") || strings.HasPrefix(l, "+++") || len(added) < 12 {
				continue
			}
			checked++
			if strings.Contains(asked.String(), added) {
				t.Errorf("a held-back test line of %s reached the model: %q", short(tk.Commit), added)
			}
			if name := testFunc.FindStringSubmatch(added); name != nil && strings.Contains(asked.String(), name[1]) {
				t.Errorf("the held-back test %s of %s reached the model", name[1], short(tk.Commit))
			}
		}
		if checked == 0 {
			t.Errorf("%s: no held-back line to look for", short(tk.Commit))
		}
		// The issue the commit says it fixes is part of its task.
		if short(tk.Commit) == commitAdd {
			if !strings.Contains(asked.String(), "Linked issue #1: "+issue.Title+"\n\n"+issue.Body) ||
				len(tk.LinkedIssues) != 1 || !tk.LinkedIssues[0].Included {
				t.Errorf("the linked issue is not in the task: %+v", tk.LinkedIssues)
			}
		}
	}

	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"COMMIT", "Resolved 3 of 3 graded task(s) (100 %); 1 skipped", "agreed with the grade on 3 of 3 (100 %)",
		"cost unknown", "Linked issues: read", short(commitMul) + "  yes"} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("the table lacks %q:\n%s", w, table.String())
		}
	}
	var back struct {
		Summary map[string]any   `json:"summary"`
		Tasks   []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Summary["resolved_rate"] != 1.0 || back.Summary["verdict_agreement"] != 1.0 || back.Summary["cost_usd"] != nil ||
		len(back.Tasks) != 5 || back.Tasks[0]["cost_usd"] != nil {
		t.Errorf("JSON summary %v", back.Summary)
	}
	if strings.Count(progress, "eval: [") != 5 {
		t.Errorf("progress:\n%s", progress)
	}

	// A second run keeps what finished: no model call, the environment
	// error checked again.
	again, _ := h.run(&model{name: "replay", respond: func(role string, req fakeopenai.Request) fakeopenai.Step {
		t.Errorf("a kept task called the model")
		return finish("no")
	}}, nil)
	for i, tk := range again.Tasks {
		if (i < 4) != tk.Resumed || tk.Status != rep.Tasks[i].Status {
			t.Errorf("second run, %s: status %s resumed %v", short(tk.Commit), tk.Status, tk.Resumed)
		}
	}
}

func TestAModelThatChangesNothingResolvesNothing(t *testing.T) {
	h := newHarness(t)
	mdl := idler()
	rep, _ := h.run(mdl, func(o *Options) { o.Limit = 3 })
	for _, tk := range rep.Tasks {
		if tk.Status != StatusUnresolved || tk.Verdict == "verified" || tk.Agrees == nil || !*tk.Agrees || len(tk.Fixed) != 0 {
			t.Errorf("%s: %s, verdict %q, fixed %q, agrees %v", short(tk.Commit), tk.Status, tk.Verdict, tk.Fixed, tk.Agrees)
		}
	}
	if s := rep.Summary; len(rep.Tasks) != 3 || s.Resolved != 0 || *s.ResolvedRate != 0 || *s.Agreement != 1 {
		t.Fatalf("summary %+v\n%s", s, dump(rep))
	}
	// --fresh runs a kept task again.
	calls := len(mdl.fake.Requests())
	again := idler()
	rep, _ = h.run(again, func(o *Options) { o.Limit, o.Fresh = 1, true })
	if len(again.fake.Requests()) == 0 || rep.Tasks[0].Resumed || calls == 0 {
		t.Fatalf("--fresh did not run the task again (%d calls before, %d now)", calls, len(again.fake.Requests()))
	}
}

func TestAModelThatBreaksATestIsUnresolvedAndSaidSo(t *testing.T) {
	h := newHarness(t)
	rep, _ := h.run(breaker(), func(o *Options) { o.Limit = 3 })
	for _, tk := range rep.Tasks {
		if tk.Status != StatusUnresolved || tk.Verdict != "failed" || tk.Agrees == nil || !*tk.Agrees || tk.FixRounds != 1 {
			t.Errorf("%s: %s, verdict %q, agrees %v, fix rounds %d", short(tk.Commit), tk.Status, tk.Verdict, tk.Agrees, tk.FixRounds)
		}
		if want := []string{"TestSub (example.com/calc)", "TestSubBelowZero (example.com/calc)"}; !slices.Equal(tk.Broken, want) {
			t.Errorf("%s broke %q, want %q", short(tk.Commit), tk.Broken, want)
		}
	}
	// The newest task's held-back test does not build on the base, so
	// that run cannot say TestSub passed there: the base's own run does.
	// The model added Mul, so the held-back test is fixed — and the task
	// is still unresolved, as TestSub broke, and selfcode said so.
	if mul := rep.Tasks[0]; short(mul.Commit) != short(commitMul) || !slices.Equal(mul.Fixed, []string{"TestMulForReportTotals (example.com/calc)"}) {
		t.Errorf("%s fixed %q, want TestMulForReportTotals", short(mul.Commit), mul.Fixed)
	}
	if s := rep.Summary; len(rep.Tasks) != 3 || s.Resolved != 0 || *s.Agreement != 1 || s.FixRounds != 3 {
		t.Fatalf("summary %+v\n%s", s, dump(rep))
	}
}

func dump(rep *Report) string {
	var b bytes.Buffer
	rep.WriteJSON(&b)
	io.WriteString(&b, "\n")
	rep.WriteTable(&b)
	return b.String()
}
