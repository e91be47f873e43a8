package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/samplerepo"
)

// dockerEnv passes what the binary needs to reach the Docker engine.
func dockerEnv() []string {
	var env []string
	for _, k := range []string{"DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "SELFCODE_SANDBOX_IMAGE"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func TestDemoRunsToTheEnd(t *testing.T) {
	dockertest.Manager(t) // skips (or fails under CI) without Docker and the image
	out, code := runCLI(t, append(dockerEnv(), "SELFCODE_DATA_DIR="+t.TempDir()), "demo")
	if code != 0 {
		t.Fatalf("selfcode demo exited %d:\n%s", code, out)
	}
	for _, want := range []string{
		"replaying a recorded transcript",
		"webhook accepted",
		"succeeded (pr_opened)",
		"Pull request #",
		"Closes #",
		`+	return "Hello, " + name + "!"`,
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// localRepo commits files in a new repository and returns it with a git
// runner for it.
func localRepo(t *testing.T, files map[string]string) (string, func(args ...string) string) {
	t.Helper()
	repo := t.TempDir()
	for p, c := range files {
		os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	return repo, git
}

// runEnv is the environment of a `selfcode run` whose model is a fake
// answering script, with a data directory of its own.
func runEnv(t *testing.T, script []fakeopenai.Step) []string {
	t.Helper()
	fake, err := fakeopenai.New(fakeopenai.Options{Script: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	return append(dockerEnv(), "SELFCODE_DATA_DIR="+t.TempDir(), "SELFCODE_LLM_BASE_URL="+fake.URL(), "SELFCODE_LLM_API_KEY=test",
		"SELFCODE_LLM_MODEL_PLANNER=planner", "SELFCODE_LLM_MODEL_EDITOR=editor", "SELFCODE_LLM_MODEL_FIXER=fixer")
}

func TestRunOnALocalCheckout(t *testing.T) {
	dockertest.Manager(t)
	repo, git := localRepo(t, samplerepo.Files())

	env := runEnv(t, []fakeopenai.Step{
		{Role: "planner", Content: `{"summary":"End the greeting with !","steps":[{"id":"1","title":"Fix","files":[{"path":"greet.go","action":"modify","purpose":"punctuation"}],"acceptance":["tests pass"]}],"risks":[],"questions":[]}`},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: arg(map[string]string{"path": "greet.go", "old_str": `name + "."`, "new_str": `name + "!"`})}}},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: arg(map[string]string{"summary": "Greet ends with !"})}}},
	})
	out, code := runCLI(t, env, "run", "--repo", repo, "--task", "Greet should end with an exclamation mark")
	if code != 0 {
		t.Fatalf("selfcode run exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "End the greeting with !") || !strings.Contains(out, "selfcode: result on branch selfcode/local-") {
		t.Fatalf("report:\n%s", out)
	}
	branches := git("branch", "--list", "selfcode/local-*")
	if branches == "" {
		t.Fatal("no selfcode/local-* branch")
	}
	branch := strings.TrimSpace(strings.TrimPrefix(branches, "*"))
	if got := git("show", branch+":greet.go"); !strings.Contains(got, `name + "!"`) {
		t.Fatalf("branch content:\n%s", got)
	}
	if got := git("rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Fatalf("the user's checkout moved to %s", got)
	}
	if _, code := runCLI(t, env, "run", "--repo", repo); code != 2 {
		t.Fatalf("missing --task: exit %d, want 2", code)
	}
	if _, code := runCLI(t, env, "run", "--repo", t.TempDir(), "--task", "x"); code != 2 {
		t.Fatalf("not a git checkout: exit %d, want 2", code)
	}
}

// SELFCODE_SMOKE_ENABLED=false turns the smoke stage off: a repository that
// configures one is verified without it, and the report says so.
func TestRunWithTheSmokeStageOff(t *testing.T) {
	dockertest.Manager(t)
	repo, _ := localRepo(t, samplerepo.ServiceFiles(dockertest.Image()))
	env := append(runEnv(t, editorSteps("items.go", samplerepo.ItemsLine, `var Items = []string{"apple", "banana", "cherry"}`)), "SELFCODE_SMOKE_ENABLED=false")
	out, code := runCLI(t, env, "run", "--repo", repo, "--task", "List cherries too")
	if code != 0 {
		t.Fatalf("selfcode run exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "The smoke stage was skipped: turned off on this server (SELFCODE_SMOKE_ENABLED=false).") || strings.Contains(out, "smoke: image build") {
		t.Fatalf("the report does not say the smoke stage was skipped:\n%s", out)
	}
}

// With the smoke stage on (the default), `selfcode run` on a service that
// configures one builds and probes it on the base and on the change: the
// report has its rows, passed, and nothing it made is left on the engine.
func TestRunWithTheSmokeStage(t *testing.T) {
	dockertest.Manager(t)
	repo, _ := localRepo(t, samplerepo.ServiceFiles(dockertest.Image()))
	env := runEnv(t, editorSteps("items.go", samplerepo.ItemsLine, `var Items = []string{"apple", "banana", "cherry"}`))
	out, code := runCLI(t, env, "run", "--repo", repo, "--task", "List cherries too")
	if code != 0 {
		t.Fatalf("selfcode run exited %d:\n%s", code, out)
	}
	if strings.Contains(out, "The smoke stage was skipped") {
		t.Fatalf("the smoke stage was skipped:\n%s", out)
	}
	for _, step := range []string{"smoke: image build", "smoke: container start", "smoke: health", "smoke: GET /api/items"} {
		if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, "| "+step+" | ") && strings.Contains(l, "✅ pass") }) {
			t.Errorf("the report has no passed row %q:\n%s", step, out)
		}
	}
	// The log names the images built (the base's and the change's), and
	// their tags the process's instance, which labels all the stage makes.
	built := smokeImageRE.FindAllStringSubmatch(out, -1)
	if len(built) != 2 || built[0][2] != built[1][2] {
		t.Fatalf("want two smoke images of one instance in the log, got %q:\n%s", built, out)
	}
	if l := dockertest.Leftovers(t, built[0][2]); len(l) > 0 {
		t.Errorf("left on the engine: %v", l)
	}
	dockertest.ImagesGone(t, []string{built[0][1], built[1][1]})
}

// smokeImageRE finds a smoke image's tag, and the instance in it, in the
// "smoke image built" log line.
var smokeImageRE = regexp.MustCompile(`"msg":"smoke image built".*?"image":"(` + sandbox.SmokeRepository + `:(local-[0-9]+)\.[0-9]+\.[0-9a-f]+)"`)
