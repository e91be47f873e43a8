package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/prompts"
)

// BenchmarkPipelineOverhead measures what selfcode adds around the model and
// the repository's own commands: mirror refresh and a fresh checkout,
// container start, copying the tree and the change in, a baseline cache hit,
// tool calls, and a verify command that does nothing (`true`), with a
// zero-latency fake model on loopback.
func BenchmarkPipelineOverhead(b *testing.B) {
	ctx := context.Background()
	m := dockertest.Manager(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	gh, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer gh.Close()
	gh.AddInstallation(1, "o")
	if err := gh.AddRepo("o", "greeter", fakegithub.RepoOptions{DefaultBranch: "main", Files: map[string]string{
		"go.mod": "module example.com/greeter\n\ngo 1.22\n", "greet.go": "package greeter\n\nfunc Greet() string { return \"Hello.\" }\n",
		".selfcode.yml": "verify:\n  - {name: noop, run: \"true\"}\n",
	}}); err != nil {
		b.Fatal(err)
	}
	tok, err := gh.MintToken(1)
	if err != nil {
		b.Fatal(err)
	}
	git, err := gitops.New(gitops.Options{Dir: b.TempDir(), Identity: gitops.Identity{Name: "bench[bot]", Email: "bench@example.com"}, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	repo := job.Repo{Owner: "o", Name: "greeter", CloneURL: gh.GitURL("o", "greeter")}
	arg := func(v any) string { s, _ := json.Marshal(v); return string(s) }
	script := []fakeopenai.Step{
		{Role: "planner", Content: `{"summary":"s","steps":[{"id":"1","title":"t","files":[{"path":"greet.go","action":"modify","purpose":"p"}],"acceptance":[]}],"risks":[],"questions":[]}`},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: arg(map[string]string{"path": "greet.go", "old_str": "Hello.", "new_str": "Hello!"})}}},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: arg(map[string]string{"summary": "done"})}}},
	}
	fake, err := fakeopenai.New(fakeopenai.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	client, _ := llm.New(llm.Options{BaseURL: fake.URL(), APIKey: "k", Models: map[chat.Role]string{chat.RolePlanner: "planner", chat.RoleEditor: "editor", chat.RoleFixer: "fixer"}})
	ps, _ := prompts.Load(prompts.Options{})
	cache, _ := verify.NewCache(verify.CacheOptions{Dir: b.TempDir()})
	p, err := pipeline.New(pipeline.Options{Model: client, Prompts: ps, Sandbox: sandbox.Backend{Manager: m}, Baseline: cache, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	once := func(i int) {
		fake.Enqueue(script...)
		ws, err := git.NewWorkspace(ctx, gitops.WorkspaceOptions{Repo: repo, ID: fmt.Sprintf("bench-%d", i), Branch: "selfcode/issue-1", Base: "main", Token: gitops.StaticToken(tok)})
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Remove()
		cfg, err := repoconfig.Load(ws.Dir)
		if err != nil {
			b.Fatal(err)
		}
		out, err := p.Run(ctx, pipeline.Input{JobID: fmt.Sprintf("bench%d", i), Repository: "o/greeter", Issue: 1, Dir: ws.Dir, BaseSHA: ws.BaseSHA, Config: cfg})
		if err != nil || !out.Verified {
			b.Fatalf("run: %v verified=%v", err, out != nil && out.Verified)
		}
	}
	once(-1) // warm: mirror cloned, baseline cached
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		once(i)
	}
}
