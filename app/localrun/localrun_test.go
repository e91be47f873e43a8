package localrun

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/tripwire"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// editor is a pipeline that changes one file and says it is verified;
// after the change it exports the base (Input.Pristine), as a job whose
// base fails with a kept setup does, and records what it was given.
type editor struct {
	repository string // Input.Repository
	pristine   string // data.txt in the export of the base
	scratch    bool   // Input.Scratch is the run's own directory, holding Dir
}

func (e *editor) Run(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
	e.repository = in.Repository
	e.scratch = in.Scratch != "" && filepath.Dir(in.Dir) == in.Scratch
	if err := os.WriteFile(filepath.Join(in.Dir, "data.txt"), []byte("changed\n"), 0o644); err != nil {
		return nil, err
	}
	dst, err := os.MkdirTemp(in.Scratch, "localrun-pristine-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dst)
	if err := in.Pristine(ctx, dst); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dst, "data.txt"))
	e.pristine = string(b)
	if err != nil {
		return nil, err
	}
	return &pipeline.Output{Summary: "changed data.txt", Changed: []string{"data.txt"}, Verified: true, Verdict: verify.Verified}, nil
}

func hgit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=h", "GIT_AUTHOR_EMAIL=h@x", "GIT_COMMITTER_NAME=h", "GIT_COMMITTER_EMAIL=h@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// `selfcode run` on a checkout someone else prepared — its .git carrying
// hooks, an fsmonitor and a filter driver its .gitattributes names — runs
// none of them on this machine, and still leaves its branch.
func TestRunOnAHostileCheckoutRunsNothingOfIt(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	hgit(t, repo, "init", "--quiet", "--initial-branch=main")
	for name, content := range map[string]string{"data.txt": "base\n", ".gitattributes": "* filter=evil diff=evil\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hgit(t, repo, "add", "--all")
	hgit(t, repo, "commit", "--quiet", "-m", "base")

	w := tripwire.New(t)
	w.Link(t, filepath.Join(repo, ".git", "hooks"), tripwire.HookNames...)
	for _, kv := range [][2]string{{"core.fsmonitor", w.Path}, {"filter.evil.clean", w.Path}, {"filter.evil.smudge", w.Path},
		{"diff.evil.textconv", w.Path}, {"diff.external", w.Path}} {
		hgit(t, repo, "config", kv[0], kv[1])
	}

	tm, err := templates.New(templates.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ed := &editor{}
	res, err := Run(context.Background(), Options{RepoDir: repo, Task: "change the data", Pipeline: ed, Templates: tm,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	w.Untouched(t, "the checkout's own git configuration")
	if res.Branch == "" || hgit(t, repo, "show", res.Branch+":data.txt") != "changed" {
		t.Fatalf("branch %q does not hold the change", res.Branch)
	}
	if !ed.scratch {
		t.Error("the pipeline was given no scratch space of the run's own")
	}
	if ed.pristine != "base\n" {
		t.Errorf("the base exported after the edit holds %q", ed.pristine)
	}
	if ed.repository != CacheName(hgit(t, repo, "rev-parse", "--show-toplevel")) {
		t.Errorf("the run's caches are named %q, not the checkout's own", ed.repository)
	}
}

// A local checkout's caches are its own: named after its folder and its
// path, the same every run, another for a checkout in a folder of the same
// name elsewhere, and a name `selfcode cache clear --repo` takes.
func TestCacheNameIsTheCheckoutsOwn(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, b := filepath.Join(root, "one", "my repo"), filepath.Join(root, "two", "my repo")
	if CacheName(a) != CacheName(a+"/") || CacheName(a) == CacheName(b) {
		t.Errorf("names %q, %q, %q: want one per checkout, stable", CacheName(a), CacheName(a+"/"), CacheName(b))
	}
	for _, top := range []string{a, filepath.Join(root, strings.Repeat("x", 80)), filepath.Join(root, "dé/jà vu")} {
		name := CacheName(top)
		if err := sandbox.CheckRepository(name); err != nil || !strings.HasPrefix(name, "local/") || len(name) > 64 {
			t.Errorf("CacheName(%q) = %q: %v", top, name, err)
		}
	}
}
