package eval

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/poll"
)

// fixHistory builds a repository of n commits after its root that each
// change a source file and its test, newest last.
func fixHistory(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	gitIn("init", "-q", "-b", "main")
	for i := range n + 1 {
		for name, text := range map[string]string{
			"a.go":      fmt.Sprintf("package a\n\n// N is %d.\nconst N = %d\n", i, i),
			"a_test.go": fmt.Sprintf("package a\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) {\n\tif N != %d {\n\t\tt.Fatal(N)\n\t}\n}\n", i),
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitIn("add", "-A")
		gitIn("commit", "-q", "--no-verify", "-m", fmt.Sprintf("Fix %d", i))
	}
	return dir
}

// Tasks run Workers at once — really at once, and never more. Each task
// here waits until as many as Workers are running (an event, not a time),
// which they only ever are if they overlap.
func TestRunRunsWorkersTasksAtOnce(t *testing.T) {
	t.Parallel()
	repo := fixHistory(t, 6)
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers %d", workers), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel) // a failed wait below must not leave tasks blocked
			var (
				mu            sync.Mutex // guards running, most and ran
				running, most int
				ran           []string
			)
			gate := make(chan struct{})
			runTask := func(ctx context.Context, c Candidate) Task {
				mu.Lock()
				running++
				most = max(most, running)
				mu.Unlock()
				select {
				case <-gate:
				case <-ctx.Done():
				}
				mu.Lock()
				running--
				ran = append(ran, c.Commit)
				mu.Unlock()
				return Task{Commit: c.Commit, Status: StatusSkipped}
			}
			var progress bytes.Buffer
			type result struct {
				rep *Report
				err error
			}
			done := make(chan result, 1)
			go func() {
				rep, err := evaluate(ctx, Options{RepoDir: repo, Limit: 6, Workers: workers, Progress: &progress}, runTask)
				done <- result{rep, err}
			}()
			poll.Until(t, fmt.Sprintf("%d tasks running at once", workers), time.Minute, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return running == workers
			})
			close(gate)
			res := <-done
			if res.err != nil {
				t.Fatal(res.err)
			}
			if most != workers || len(ran) != 6 || len(res.rep.Tasks) != 6 {
				t.Errorf("%d tasks ran at once, want %d; %d of 6 ran, %d reported", most, workers, len(ran), len(res.rep.Tasks))
			}
			// Progress as each task starts and ends.
			out := progress.String()
			if !strings.Contains(out, fmt.Sprintf("(limit 6; up to %d at once)", workers)) ||
				strings.Count(out, "eval: started ") != 6 || strings.Count(out, "eval: [") != 6 || !strings.Contains(out, "running): Fix 6\n") {
				t.Errorf("progress:\n%s", out)
			}
		})
	}
}

// Without a limit, the 20 newest candidates are evaluated, newest first.
func TestRunDefaultLimitIsTheNewestTwenty(t *testing.T) {
	t.Parallel()
	repo := fixHistory(t, DefaultLimit+2)
	ctx := context.Background()
	all, err := Candidates(ctx, repo, 100)
	if err != nil || len(all) != DefaultLimit+2 {
		t.Fatalf("%d candidates, %v", len(all), err)
	}
	var progress bytes.Buffer
	rep, err := evaluate(ctx, Options{RepoDir: repo, Progress: &progress}, func(ctx context.Context, c Candidate) Task {
		return Task{Commit: c.Commit, Status: StatusSkipped}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tasks) != DefaultLimit || DefaultLimit != 20 {
		t.Fatalf("%d tasks, want the default limit of 20", len(rep.Tasks))
	}
	for i, tk := range rep.Tasks {
		if tk.Commit != all[i].Commit {
			t.Errorf("task %d is %s, want the %dth newest candidate %s", i, short(tk.Commit), i+1, short(all[i].Commit))
		}
	}
	if !strings.Contains(progress.String(), "eval: 20 task(s)") || !strings.Contains(progress.String(), "(limit 20;") {
		t.Errorf("progress:\n%s", progress.String())
	}
}
