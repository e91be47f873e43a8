package pipeline_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/tripwire"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/prompts"
)

// layered is a module whose packages import each other in a chain:
// cmd/tool → c → b → a, and d → a.
var layered = map[string]string{
	"go.mod":           "module example.com/layers\n\ngo 1.99\n\ntoolchain go1.99.1\n",
	"a/a.go":           "package a\n\nfunc A() int { return 1 }\n",
	"a/a_test.go":      "package a\n",
	"b/b.go":           "package b\n\nimport \"example.com/layers/a\"\n\nfunc B() int { return a.A() }\n",
	"c/c.go":           "package c\n\nimport \"example.com/layers/b\"\n\nfunc C() int { return b.B() }\n",
	"d/d.go":           "package d\n\nimport \"example.com/layers/a\"\n\nfunc D() int { return a.A() }\n",
	"cmd/tool/main.go": "package main\n\nimport \"example.com/layers/c\"\n\nfunc main() { _ = c.C() }\n",
	"README.md":        "layers\n",
}

func planTouching(files ...string) string {
	type f struct {
		Path    string `json:"path"`
		Action  string `json:"action"`
		Purpose string `json:"purpose"`
	}
	var fs []f
	for _, p := range files {
		fs = append(fs, f{p, "modify", "change it"})
	}
	b, _ := json.Marshal(map[string]any{"summary": "change " + strings.Join(files, ", "),
		"steps": []any{map[string]any{"id": "1", "title": "edit", "files": fs, "acceptance": []string{"tests pass"}}},
		"risks": []string{}, "questions": []string{}})
	return string(b)
}

// scoped runs the pipeline (without a sandbox: a plan within limits stops at
// verification) on the layered module with a scripted planner.
func scoped(t *testing.T, cfgYAML string, plans ...string) (*pipeline.Output, *recorder, *fakeopenai.Server, error) {
	t.Helper()
	return scopedOn(t, layered, false, cfgYAML, plans...)
}

// scopedOn is scoped on files, as an overnight (unattended) job or not.
func scopedOn(t *testing.T, files map[string]string, unattended bool, cfgYAML string, plans ...string) (*pipeline.Output, *recorder, *fakeopenai.Server, error) {
	t.Helper()
	var script []fakeopenai.Step
	for _, p := range plans {
		script = append(script, planner(p))
	}
	fake, err := fakeopenai.New(fakeopenai.Options{Script: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	client, err := llm.New(llm.Options{BaseURL: fake.URL(), APIKey: "k", Models: map[chat.Role]string{
		chat.RolePlanner: "planner", chat.RoleEditor: "editor", chat.RoleFixer: "fixer", chat.RoleReporter: "reporter"}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load(prompts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Options{Model: client, Prompts: ps})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := repoconfig.Parse([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	dir, base := gitRepo(t, files)
	rec := &recorder{}
	out, err := p.Run(context.Background(), pipeline.Input{JobID: "01jscope", Repository: "o/layers", Issue: 4,
		IssueTitle: "Change A", Dir: dir, BaseSHA: base, Config: cfg, Progress: rec, Unattended: unattended})
	return out, rec, fake, err
}

// The guard measures the plan with no go command at all (the module's
// go.mod names a toolchain nobody has).
func TestScopeGuard(t *testing.T) {
	w := tripwire.New(t)
	w.OnPath(t, "go")
	tests := []struct {
		name        string
		cfg         string
		plans       []string
		wantCalls   int
		wantSkipped string // substring; "" = not skipped
		wantRadius  []string
		wantNarrow  bool
	}{
		{"within limits: no second planner call", "limits: {blast_radius: 5}", []string{planTouching("a/a.go")},
			1, "", []string{"example.com/layers/b", "example.com/layers/c", "example.com/layers/cmd/tool", "example.com/layers/d"}, false},
		{"too wide, narrowed", "limits: {blast_radius: 2}", []string{planTouching("a/a.go"), planTouching("c/c.go")},
			2, "", []string{"example.com/layers/cmd/tool"}, true},
		{"too wide twice: skipped", "limits: {blast_radius: 1}", []string{planTouching("a/a.go"), planTouching("b/b.go")},
			2, "blast radius is 2 packages (limit 1): example.com/layers/c, example.com/layers/cmd/tool", []string{"example.com/layers/c", "example.com/layers/cmd/tool"}, true},
		{"too many files twice: skipped", "limits: {max_files: 1}", []string{planTouching("c/c.go", "README.md"), planTouching("c/c.go", "d/d.go")},
			2, "touches 2 files (max_files 1)", []string{"example.com/layers/cmd/tool"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rec, fake, err := scoped(t, tt.cfg, tt.plans...)
			if out == nil {
				t.Fatalf("no output: %v", err)
			}
			if n := len(fake.Requests()); n != tt.wantCalls {
				t.Fatalf("%d planner calls, want %d", n, tt.wantCalls)
			}
			sc := out.Scope
			if sc == nil || !reflect.DeepEqual(sc.BlastRadius, tt.wantRadius) || sc.Narrowed != tt.wantNarrow {
				t.Fatalf("scope %+v", sc)
			}
			if _, ok := rec.arts[pipeline.ScopeArtifact]; !ok {
				t.Fatal("no scope artifact")
			}
			if tt.wantSkipped == "" {
				if out.Skipped != "" {
					t.Fatalf("skipped: %s", out.Skipped)
				}
				// It went on to verification, which needs a sandbox here.
				if err == nil || !strings.Contains(err.Error(), "sandbox") {
					t.Fatalf("err %v", err)
				}
				if tt.wantNarrow && (sc.First == nil || len(sc.First.BlastRadius) != 4) {
					t.Fatalf("first plan's scope not kept: %+v", sc.First)
				}
				if tt.wantNarrow && !strings.Contains(string(fake.Requests()[1].Raw), "too wide for one unattended change") {
					t.Fatal("the second planner call did not ask for a narrower plan")
				}
				return
			}
			if err != nil {
				t.Fatalf("skip is not an error: %v", err)
			}
			if !strings.Contains(out.Skipped, tt.wantSkipped) || !strings.Contains(out.Skipped, "Skipped") {
				t.Fatalf("skipped %q, want %q", out.Skipped, tt.wantSkipped)
			}
			if last := rec.stages[len(rec.stages)-1]; last != "plan:fail" {
				t.Fatalf("stages %v", rec.stages)
			}
		})
	}
	w.Untouched(t, "the scope guard's go command")
}

// When the blast radius cannot be computed — code in a language whose
// imports are not read, a script, a file in the touched language too
// large to read — an overnight job is held (nothing edited, the reason
// given) and a daytime job goes on with the reason recorded: the guard is
// never silently off, nor silently smaller.
func TestScopeGuardHoldsWhatItCannotMeasure(t *testing.T) {
	t.Parallel()
	with := func(add map[string]string) map[string]string {
		files := map[string]string{}
		for k, v := range layered {
			files[k] = v
		}
		for k, v := range add {
			files[k] = v
		}
		return files
	}
	python := map[string]string{
		"pyproject.toml": "[project]\nname = \"shop\"\nversion = \"0.1.0\"\n",
		"shop/money.py":  "def cents(x):\n    return round(x * 100)\n",
		"shop/huge.py":   "from shop.money import cents\n" + strings.Repeat("# generated\n", 200_000),
	}
	tests := []struct {
		name  string
		files map[string]string
		plan  string
		why   string
	}{
		{"rust", with(map[string]string{"native/lib.rs": "pub fn f() {}\n"}), planTouching("native/lib.rs", "a/a.go"), "native/lib.rs"},
		{"a shell script", with(map[string]string{"scripts/release.sh": "#!/bin/sh\ngo build ./cmd/tool\n"}), planTouching("scripts/release.sh"), "scripts/release.sh"},
		{"a python file too large to read", python, planTouching("shop/money.py"), "over 2 MiB"},
	}
	for _, tt := range tests {
		for _, unattended := range []bool{true, false} {
			out, rec, _, err := scopedOn(t, tt.files, unattended, "limits: {blast_radius: 5}", tt.plan)
			if out == nil || out.Scope == nil {
				t.Fatalf("%s, unattended=%v: no scope (%v)", tt.name, unattended, err)
			}
			sc := out.Scope
			if !strings.Contains(sc.Note, tt.why) || sc.Held != unattended {
				t.Fatalf("%s, unattended=%v: scope %+v", tt.name, unattended, sc)
			}
			if !unattended {
				if out.Skipped != "" || err == nil || !strings.Contains(err.Error(), "sandbox") {
					t.Fatalf("%s: a daytime job must go on to verification: skipped %q err %v", tt.name, out.Skipped, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: a hold is not an error: %v", tt.name, err)
			}
			if !strings.Contains(out.Skipped, "held because the plan's blast radius could not be computed") ||
				!strings.Contains(out.Skipped, tt.why) || len(out.Changed) != 0 {
				t.Fatalf("%s: skipped %q changed %v", tt.name, out.Skipped, out.Changed)
			}
			if last := rec.stages[len(rec.stages)-1]; last != "plan:fail" {
				t.Fatalf("%s: stages %v", tt.name, rec.stages)
			}
		}
	}
}
