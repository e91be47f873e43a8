package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline/chat"
)

// evalHistory builds app/eval's test repository (see its testdata/README.md).
func evalHistory(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "calc")
	out, err := exec.Command("sh", filepath.Join("..", "..", "app", "eval", "testdata", "history.sh"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("history.sh: %v\n%s", err, out)
	}
	return dir
}

func TestEvalBadUsage(t *testing.T) {
	t.Parallel()
	repo := evalHistory(t)
	env := []string{"SELFCODE_DATA_DIR=" + t.TempDir()}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"eval"}, "--repo is required"},
		{[]string{"eval", "--repo", repo, "--limit", "0"}, "at least one commit"},
		{[]string{"eval", "--repo", t.TempDir()}, "is not a git checkout"},
		{[]string{"eval", "--repo", repo, "--json", filepath.Join(t.TempDir(), "no", "such", "out.json")}, "its folder does not exist"},
		{[]string{"eval", "--repo", repo, "--limit", "many"}, "invalid argument"},
	} {
		out, code := runCLI(t, env, tt.args...)
		if code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("selfcode %s: exit %d, want 2 saying %q:\n%s", strings.Join(tt.args, " "), code, tt.want, out)
		}
	}
}

// The flags and the configuration reach eval: without --limit the default
// of 20 commits, and SELFCODE_WORKERS tasks at once.
func TestEvalOptionsFromFlagsAndConfig(t *testing.T) {
	t.Parallel()
	repo, data := t.TempDir(), t.TempDir()
	cfg, err := config.Load(config.LoadOptions{Environ: []string{"SELFCODE_WORKERS=3", "SELFCODE_DATA_DIR=" + data, "SELFCODE_LLM_MODEL=m"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args  []string
		limit int
		fresh bool
	}{
		{[]string{"--repo", repo}, 20, false},
		{[]string{"--repo", repo, "--limit", "5", "--fresh"}, 5, true},
	} {
		c := evalCmd()
		if err := c.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		f, err := readEvalFlags(c)
		if err != nil {
			t.Fatal(err)
		}
		o := evalOptions(cfg, f)
		if o.RepoDir != repo || o.Limit != tt.limit || o.Fresh != tt.fresh || o.Workers != 3 || o.StoreDir != filepath.Join(data, "eval") ||
			o.Models[chat.RoleEditor] != "m" || o.Fingerprint == "" {
			t.Errorf("%q: repo %s, limit %d, fresh %v, workers %d, store %s, models %v", tt.args, o.RepoDir, o.Limit, o.Fresh, o.Workers, o.StoreDir, o.Models)
		}
	}
}

// The command wires the real pipeline and sandbox: the newest task of the
// history, replayed, is resolved; the table goes to stdout and the JSON
// to --json.
func TestEvalCommand(t *testing.T) {
	dockertest.Manager(t)
	repo := evalHistory(t)
	show := func(rev string) string {
		out, err := exec.Command("git", "-C", repo, "show", rev).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	edit, _ := json.Marshal(map[string]string{"path": "calc.go", "old_str": show("HEAD^:calc.go"), "new_str": show("HEAD:calc.go")})
	fake, err := fakeopenai.New(fakeopenai.Options{Responder: func(req fakeopenai.Request) fakeopenai.Step {
		switch {
		case req.Role == "planner":
			return fakeopenai.Step{Content: `{"summary":"Add Mul","steps":[{"id":"1","title":"Add Mul","files":[{"path":"calc.go","action":"modify","purpose":"Mul"}],"acceptance":["tests pass"]}],"risks":[],"questions":[]}`}
		case req.Role == "editor" && !slices.ContainsFunc(req.Body.Messages, func(m fakeopenai.Message) bool { return m.Role == "tool" }):
			return fakeopenai.Step{ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: string(edit)}}}
		}
		return fakeopenai.Step{ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: `{"summary":"added Mul"}`}}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	out := filepath.Join(t.TempDir(), "eval.json")
	env := append(dockerEnv(), "SELFCODE_DATA_DIR="+t.TempDir(), "SELFCODE_WORKERS=3", "SELFCODE_LLM_BASE_URL="+fake.URL(), "SELFCODE_LLM_API_KEY=test",
		"SELFCODE_LLM_MODEL_PLANNER=planner", "SELFCODE_LLM_MODEL_EDITOR=editor", "SELFCODE_LLM_MODEL_FIXER=fixer")
	text, code := runCLI(t, env, "eval", "--repo", repo, "--limit", "1", "--json", out)
	if code != 0 {
		t.Fatalf("selfcode eval exited %d:\n%s", code, text)
	}
	for _, want := range []string{"(limit 1; up to 3 at once)", "eval: started 216169f (1 running): Report totals need a product",
		"eval: [1/1] 216169f resolved, verdict verified", "216169f  yes       verified",
		"Resolved 1 of 1 graded task(s) (100 %)", "Linked issues: not read: no remote of the repository is on api.github.com"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Models  map[string]string `json:"models"`
		Tasks   []struct{ Status, Verdict string }
		Summary struct {
			ResolvedRate float64 `json:"resolved_rate"`
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Tasks) != 1 || rep.Tasks[0].Status != "resolved" ||
		rep.Summary.ResolvedRate != 1 || rep.Models["editor"] != "editor" {
		t.Fatalf("--json: %v\n%s", err, b)
	}
}
