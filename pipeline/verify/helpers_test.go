package verify

import (
	"github.com/selfcode/selfcode/pipeline/testreport"

	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// scriptRunner answers each command (by name) with a scripted Outcome or
// error and records what it was asked to run.
type scriptRunner struct {
	mu       sync.Mutex
	outcomes map[string]Outcome
	errs     map[string]error
	got      []Command
}

func (s *scriptRunner) Exec(ctx context.Context, c Command) (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, c)
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	if err := s.errs[c.Name]; err != nil {
		return Outcome{}, err
	}
	o, ok := s.outcomes[c.Name]
	if !ok {
		return Outcome{}, fmt.Errorf("no outcome scripted for %q", c.Name)
	}
	return o, nil
}

// hostRunner runs commands with the host's shell in dir: the real `go`
// stands in for the sandbox.
type hostRunner struct{ dir string }

func (h hostRunner) Exec(ctx context.Context, c Command) (Outcome, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Run)
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOPROXY=off", "GOWORK=off", "GOFLAGS=")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	o := Outcome{Output: string(out), Duration: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		o.ExitCode = exitErr.ExitCode()
		o.TimedOut = ctx.Err() != nil
	default:
		return Outcome{}, err
	}
	return o, nil
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gotest", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// step is one scripted command for runFixture.
type step struct {
	name, run string
	file      string // testdata/gotest file, or "" for empty output
	exit      int
	timedOut  bool
}

// runFixture passes scripted commands through Verify, so results are built
// exactly as in production.
func runFixture(t testing.TB, steps ...step) Run {
	t.Helper()
	r := &scriptRunner{outcomes: map[string]Outcome{}}
	var cmds []Command
	for _, s := range steps {
		out := ""
		if s.file != "" {
			out = fixture(t, s.file)
		}
		r.outcomes[s.name] = Outcome{ExitCode: s.exit, Output: out, TimedOut: s.timedOut, Duration: time.Second}
		cmds = append(cmds, Command{Name: s.name, Run: s.run})
	}
	run, err := Verify(context.Background(), r, cmds)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// copyModule copies testdata/modules/<name> into a new temporary directory.
func copyModule(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join("testdata", "modules", name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// ids names tests of one package.
func ids(pkg string, tests ...string) []testreport.ID {
	var out []testreport.ID
	for _, t := range tests {
		out = append(out, testreport.ID{Suite: pkg, Name: t})
	}
	return out
}
