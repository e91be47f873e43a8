package overnight_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/overnight"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/tripwire"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/prompts"
)

// realPipeline is the real pipeline on the harness's scripted model, with
// the sandbox sb (nil: none).
func realPipeline(t *testing.T, h *harness, sb *sandbox.Manager) *pipeline.Pipeline {
	t.Helper()
	client, err := llm.New(llm.Options{BaseURL: h.Model.URL(), APIKey: "k", MaxRetries: -1, Models: map[chat.Role]string{
		chat.RolePlanner: "planner", chat.RoleEditor: "editor", chat.RoleFixer: "fixer"}})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load(prompts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := pipeline.Options{Model: client, Prompts: ps}
	if sb != nil {
		o.Sandbox = sandbox.Backend{Manager: sb}
	}
	p, err := pipeline.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An overnight job on a Go module whose go.mod names a toolchain no machine
// here has (any go command would go and download it): the blast-radius
// guard still decides — the plan is too wide, the job is skipped with the
// radius — and no go command runs on the host. A plan touching code whose
// imports selfcode cannot read, or a module that a file too large to read
// may import, holds its overnight job, saying why (in the morning report
// too).
func TestOvernightGuardDecidesWithoutRunningTheRepository(t *testing.T) {
	w := tripwire.New(t)
	w.OnPath(t, "go")
	toolchain := map[string]string{
		".selfcode.yml":    "limits: {blast_radius: 1}\n",
		"go.mod":           "module example.com/layers\n\ngo 1.99\n\ntoolchain go1.99.1\n",
		"a/a.go":           "package a\n\nfunc A() int { return 1 }\n",
		"b/b.go":           "package b\n\nimport \"example.com/layers/a\"\n\nfunc B() int { return a.A() }\n",
		"c/c.go":           "package c\n\nimport \"example.com/layers/b\"\n\nfunc C() int { return b.B() }\n",
		"cmd/tool/main.go": "package main\n\nimport \"example.com/layers/c\"\n\nfunc main() { _ = c.C() }\n",
	}
	mixed := map[string]string{
		"pyproject.toml": "[project]\nname = \"shop\"\nversion = \"0.1.0\"\n",
		"shop/money.py":  "def cents(x):\n    return round(x * 100)\n",
		"native/fast.rs": "pub fn cents(x: f64) -> i64 { (x * 100.0).round() as i64 }\n",
		// Generated, over 2 MiB: its imports are not read.
		"shop/tables.py": "from shop.money import cents\n" + strings.Repeat("# generated\n", 200_000),
	}
	eng := &lazyPipeline{}
	h := newHarness(t, eng, nil, map[string]map[string]string{"alpha": toolchain, "beta": mixed},
		fakeopenai.Step{Role: "planner", Content: planTouching("a/a.go")},
		fakeopenai.Step{Role: "planner", Content: planTouching("b/b.go")},
		fakeopenai.Step{Role: "planner", Content: planTouching("native/fast.rs")},
		fakeopenai.Step{Role: "planner", Content: planTouching("shop/money.py")})
	eng.p = realPipeline(t, h, nil)

	// One at a time, so each takes its own plans from the script.
	a := h.Issue("alpha", "Change A everywhere", "selfcode:overnight")
	ida := h.Label("labeled", "alpha", a, "selfcode:overnight", "Change A everywhere")
	h.clk.Set(windowStart.Add(time.Second))
	ja := h.Wait(ida)
	if ja.State != job.StateCanceled || !strings.Contains(ja.Reason, "blast radius is 2 packages (limit 1)") {
		t.Fatalf("toolchain repository: %s %q, want skipped with its blast radius", ja.State, ja.Reason)
	}
	if len(h.Comments("alpha", a, "example.com/layers/cmd/tool")) == 0 {
		t.Fatal("the skip reply does not list the blast radius")
	}

	b := h.Issue("beta", "Faster cents", "selfcode:overnight")
	idb := h.Label("labeled", "beta", b, "selfcode:overnight", "Faster cents")
	h.clk.Set(windowStart.Add(24*time.Hour + time.Second))
	jb := h.Wait(idb)
	if jb.State != job.StateCanceled || !strings.Contains(jb.Reason, "held because the plan's blast radius could not be computed") ||
		!strings.Contains(jb.Reason, "native/fast.rs") {
		t.Fatalf("held job: %s %q", jb.State, jb.Reason)
	}
	if len(h.Comments("beta", b, "held because the plan's blast radius could not be computed")) == 0 {
		t.Fatal("no reply saying why the job was held")
	}
	// A Python module a file too large to read may import: the radius
	// would be smaller than it is, so the job is held too, and the
	// morning report says why.
	c := h.Issue("beta", "Round cents", "selfcode:overnight")
	idc := h.Label("labeled", "beta", c, "selfcode:overnight", "Round cents")
	day3 := windowStart.Add(48 * time.Hour)
	h.clk.Set(day3.Add(time.Second))
	jc := h.Wait(idc)
	if jc.State != job.StateCanceled || !strings.Contains(jc.Reason, "over 2 MiB") || !strings.Contains(jc.Reason, "shop/tables.py") {
		t.Fatalf("held job: %s %q", jc.State, jc.Reason)
	}
	if prs := h.GitHub.PullRequests(owner, "beta"); len(prs) != 0 {
		t.Fatalf("a held job opened %+v", prs)
	}
	run := overnight.BuildRun(context.Background(), h.Server.Store, jc, nil, time.UTC)
	if run.Outcome != overnight.Skipped || !strings.Contains(run.Narrative, "over 2 MiB") || !strings.Contains(run.Narrative, "shop/tables.py") {
		t.Fatalf("the report's run %+v does not say why it was held", run)
	}
	w.Untouched(t, "a go command")
}

// An overnight job on a repository that does everything it can to run
// something on the server: its .gitattributes names filter, diff and merge
// drivers that this host's git configuration defines (global, XDG and
// GIT_CONFIG_* in the environment, with hooks and an fsmonitor); it
// declares a submodule with an ext:: URL and an LFS configuration; go is a
// trap. And the git directories selfcode itself runs git in hold what a
// hostile .git would: its mirror of the repository (in the data
// directory, before the job fetches into it) and the job's workspace
// repository (before the pipeline, so the commit, diff, secret scan and
// push meet it) carry a config naming the tripwire as fsmonitor, hooks
// path, pager, ssh command, credential helper, external diff, gpg program
// (with signing on), drivers and aliases, and every hook is the tripwire.
// The job runs end to end — plan, the guard (reading Python imports as
// text), edit, verification in the sandbox, commit, push, pull request —
// and nothing runs on the host.
func TestOvernightOnAHostileRepositoryRunsNothingOnTheHost(t *testing.T) {
	sb := dockertest.Manager(t) // before the environment below: it runs the docker CLI
	w := tripwire.New(t)
	w.OnPath(t, "go")
	tr, marker, hooks := w.Path, w.Marker, w.Hooks(t)
	drivers := "[filter \"evil\"]\n\tclean = " + tr + "\n\tsmudge = " + tr + "\n\trequired = true\n" +
		"[filter \"lfs\"]\n\tclean = " + tr + "\n\tsmudge = " + tr + "\n" +
		"[diff \"evil\"]\n\ttextconv = " + tr + "\n\tcommand = " + tr + "\n[merge \"evil\"]\n\tdriver = " + tr + "\n"
	host := drivers + "[core]\n\thooksPath = " + hooks + "\n\tfsmonitor = " + tr + "\n[diff]\n\texternal = " + tr +
		"\n[submodule]\n\trecurse = true\n[protocol \"ext\"]\n\tallow = always\n"
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "git", "config"), []byte(host), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
	t.Setenv("GIT_CONFIG_VALUE_0", hooks)

	repo := map[string]string{
		".gitattributes":       "* filter=evil diff=evil merge=evil\n*.bin filter=lfs diff=lfs merge=lfs -text\n",
		".gitmodules":          "[submodule \"evil\"]\n\tpath = evil\n\turl = ext::sh -c touch% " + marker + "\n",
		".lfsconfig":           "[lfs]\n\turl = http://127.0.0.1:1/lfs\n",
		".githooks/pre-commit": "#!/bin/sh\ntouch " + marker + "\n",
		"pyproject.toml": "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n" +
			"[project]\nname = \"shop\"\nversion = \"0.1.0\"\n\n[tool.setuptools.packages.find]\nwhere = [\"src\"]\n",
		"src/shop/__init__.py": "",
		"src/shop/money.py":    "def cents(x):\n    return round(x * 100)\n",
		"src/shop/cart.py":     "from .money import cents\n\n\ndef total(prices):\n    return sum(cents(p) for p in prices)\n",
		"tests/test_cart.py":   "from shop.cart import total\n\n\ndef test_total():\n    assert total([1.5, 2]) == 350\n",
	}
	eng := &lazyPipeline{}
	h := newHarness(t, eng, nil, map[string]map[string]string{"alpha": repo},
		fakeopenai.Step{Role: "planner", Content: planTouching("src/shop/money.py")},
		fakeopenai.Step{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: jsonArgs(map[string]string{
			"path": "src/shop/money.py", "old_str": "def cents(x):\n", "new_str": "def cents(x):\n    \"\"\"x in whole units, as cents.\"\"\"\n"})}}},
		fakeopenai.Step{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: jsonArgs(map[string]string{"summary": "documented cents"})}}})
	eng.p = realPipeline(t, h, sb)
	// What a hostile .git would hold, where selfcode runs git.
	hostile := drivers + "[core]\n\tfsmonitor = " + tr + "\n\thooksPath = " + hooks + "\n\tpager = " + tr +
		"\n\tsshCommand = " + tr + "\n\taskPass = " + tr + "\n\teditor = " + tr +
		"\n[credential]\n\thelper = " + tr + "\n[diff]\n\texternal = " + tr +
		"\n[gpg]\n\tprogram = " + tr + "\n[commit]\n\tgpgSign = true\n[tag]\n\tgpgSign = true" +
		"\n[alias]\n\tci = !" + tr + "\n\tst = !" + tr +
		"\n[submodule]\n\trecurse = true\n[protocol \"ext\"]\n\tallow = always\n"
	plant := func(gitDir string) error {
		f, err := os.OpenFile(filepath.Join(gitDir, "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(hostile)
		if err := errors.Join(err, f.Close(), os.MkdirAll(filepath.Join(gitDir, "hooks"), 0o755)); err != nil {
			return err
		}
		for _, n := range tripwire.HookNames {
			if err := os.Symlink(tr, filepath.Join(gitDir, "hooks", n)); err != nil {
				return err
			}
		}
		return nil
	}
	// selfcode's mirror, made before the job (the job fetches into it).
	bare, err := h.GitHub.BareDir(owner, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	mirror := filepath.Join(h.DataDir, "git", "mirrors", strings.ToLower(owner), "alpha.git")
	if err := os.MkdirAll(filepath.Dir(mirror), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := gitops.Command(t.Context(), filepath.Dir(mirror), "clone", "--mirror", "--quiet", "--", bare, mirror).CombinedOutput(); err != nil {
		t.Fatalf("make the mirror: %v %s", err, out)
	}
	if err := plant(mirror); err != nil {
		t.Fatal(err)
	}
	// The job's workspace repository, beside its checkout, once the
	// checkout is made.
	var planted atomic.Int32
	eng.before = func(in pipeline.Input) {
		if err := plant(filepath.Join(filepath.Dir(in.Dir), "git")); err != nil {
			t.Errorf("plant in the workspace of %s: %v", in.Dir, err)
			return
		}
		planted.Add(1)
	}

	issue := h.Issue("alpha", "Document cents", "selfcode:overnight")
	id := h.Label("labeled", "alpha", issue, "selfcode:overnight", "Document cents")
	h.clk.Set(windowStart.Add(time.Second))
	j := h.Wait(id)
	w.Untouched(t, "something of the repository or of a planted .git")
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePROpened {
		t.Fatalf("job %s %s %q %q\n%s", j.State, j.Outcome, j.Error, j.Reason, h.Logs())
	}
	prs := h.GitHub.PullRequests(owner, "alpha")
	if len(prs) != 1 || prs[0].Draft || !strings.Contains(prs[0].Body, "## Blast radius") || !strings.Contains(prs[0].Body, "`shop.cart`") {
		t.Fatalf("pull requests %+v: want one, verified, whose body lists the blast radius shop.cart", prs)
	}
	if got, err := h.GitHub.FileAt(owner, "alpha", prs[0].Head, "src/shop/money.py"); err != nil || !strings.Contains(got, "as cents") {
		t.Fatalf("the change did not reach %s: %q %v", prs[0].Head, got, err)
	}
	if planted.Load() != 1 || !strings.Contains(h.Logs(), `"msg":"mirror refreshed"`) || strings.Contains(h.Logs(), `"msg":"mirror created"`) {
		t.Fatalf("the job did not use the planted mirror and workspace (planted %d)", planted.Load())
	}
}

func jsonArgs(v any) string { b, _ := json.Marshal(v); return string(b) }
