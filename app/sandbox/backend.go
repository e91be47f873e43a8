package sandbox

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Bounds on the report files read back after a command.
const (
	maxReportFiles = 50
	maxReportBytes = 32 << 20 // per file
	maxReportTotal = 64 << 20 // per command
)

// Backend runs the pipeline's sandbox sessions (pipeline.Sandbox) in this
// package's containers. Another backend plugs in by implementing
// pipeline.Sandbox the same way.
type Backend struct {
	Manager *Manager
}

// Start starts a job's container.
func (s Backend) Start(ctx context.Context, spec pipeline.SandboxSpec) (pipeline.Session, error) {
	c, err := s.Manager.Start(ctx, Spec{JobID: spec.JobID, Image: spec.Image, Deadline: spec.Deadline, SetupNetwork: spec.SetupNetwork,
		Cache: spec.Cache})
	if err != nil {
		return nil, err
	}
	return &session{c: c}, nil
}

// ImageID tells the image a spec's Image names apart from any other
// (pipeline.Sandbox): the baseline cache keys by it.
func (s Backend) ImageID(ctx context.Context, image string) (string, error) {
	return s.Manager.ImageID(ctx, image)
}

type session struct {
	c     *Container
	marks atomic.Int64
}

func (s *session) CopyTree(ctx context.Context, dir string) error { return s.c.CopyTree(ctx, dir) }

func (s *session) CopyFiles(ctx context.Context, dir string, changed, deleted []string) error {
	return s.c.CopyFiles(ctx, dir, changed, deleted)
}

func (s *session) DropNetwork(ctx context.Context) error { return s.c.DropNetwork(ctx) }

func (s *session) RestoreSetup(ctx context.Context, key string) (bool, error) {
	return s.c.RestoreSetup(ctx, key)
}

func (s *session) SaveSetup(ctx context.Context, key string) error { return s.c.SaveSetup(ctx, key) }

func (s *session) ForgetSetup(ctx context.Context, key string) error {
	return s.c.ForgetSetup(ctx, key)
}

func (s *session) Close(ctx context.Context) error { return s.c.Close(ctx) }

func (s *session) Setup(ctx context.Context, run string, timeout time.Duration) (verify.Outcome, error) {
	r, err := s.c.Exec(ctx, Cmd{Run: run, Timeout: timeout, Setup: true})
	return outcome(r), err
}

// Exec runs a verification command; when it names report files, the ones
// it wrote (newer than a mark made just before it) are read back.
func (s *session) Exec(ctx context.Context, c verify.Command) (verify.Outcome, error) {
	mark := ""
	if len(c.Reports) > 0 {
		mark = fmt.Sprintf("/tmp/.selfcode-mark-%d", s.marks.Add(1))
		if _, err := s.c.Exec(ctx, Cmd{Run: "mkdir -p /tmp/selfcode-reports && : > " + mark, Timeout: time.Minute}); err != nil {
			return verify.Outcome{}, err
		}
	}
	r, err := s.c.Exec(ctx, Cmd{Run: c.Run, Timeout: c.Timeout, OutputCap: c.OutputBytes})
	if err != nil {
		return outcome(r), err
	}
	out := outcome(r)
	if mark != "" {
		files, err := s.readReports(ctx, c.Reports, mark)
		if err != nil {
			return out, fmt.Errorf("read the reports of %q: %w", c.Name, err)
		}
		out.Files = files
	}
	return out, nil
}

// readReports finds the regular files matching patterns (absolute sandbox
// paths, or globs relative to the work tree) written since mark, and reads
// them, within bounds. Names come from inside the sandbox and are checked
// before use.
func (s *session) readReports(ctx context.Context, patterns []string, mark string) (map[string][]byte, error) {
	work := s.c.Workdir()
	roots := map[string]bool{}
	for _, p := range patterns {
		roots[searchRoot(p, work)] = true
	}
	var args []string
	for r := range roots {
		args = append(args, verify.ShellQuote(r))
	}
	// Skip the heavy trees nobody keeps reports in.
	list := fmt.Sprintf(`find %s \( -name .git -o -name node_modules -o -name .venv \) -prune -o -type f -newer %s -size -%dk -print0 2>/dev/null; exit 0`,
		strings.Join(args, " "), mark, maxReportBytes/1024)
	res, err := s.c.Exec(ctx, Cmd{Run: list, Timeout: time.Minute, OutputCap: 4 << 20})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	total := 0
	for _, name := range strings.Split(res.Stdout, "\x00") {
		if name == "" || len(files) >= maxReportFiles || !path.IsAbs(name) || path.Clean(name) != name || strings.ContainsAny(name, "\n\r") {
			continue
		}
		if !matchesAny(patterns, name, work) {
			continue
		}
		r, err := s.c.Exec(ctx, Cmd{Run: "cat -- " + verify.ShellQuote(name), Timeout: time.Minute, OutputCap: maxReportBytes})
		if err != nil {
			return nil, err
		}
		if r.ExitCode != 0 || r.Truncated || total+len(r.Stdout) > maxReportTotal {
			continue
		}
		total += len(r.Stdout)
		files[name] = []byte(r.Stdout)
	}
	return files, nil
}

// searchRoot is the directory to look in for pattern: the part before its
// first glob metacharacter, or the work tree for a relative pattern.
func searchRoot(pattern, work string) string {
	if !path.IsAbs(pattern) {
		return work
	}
	dir := pattern
	if i := strings.IndexAny(pattern, "*?[{"); i >= 0 {
		dir = pattern[:i]
	}
	return path.Dir(dir + "x") // "a/b/" → "a/b", "a/b/c.xml" → "a/b"
}

// matchesAny reports whether the absolute path name matches a pattern.
func matchesAny(patterns []string, name, work string) bool {
	for _, p := range patterns {
		target := name
		if !path.IsAbs(p) {
			rel, ok := strings.CutPrefix(name, work+"/")
			if !ok {
				continue
			}
			target = rel
		}
		if ok, err := doublestar.Match(p, target); err == nil && ok {
			return true
		}
	}
	return false
}

func outcome(r Result) verify.Outcome {
	out := r.Output
	if out == "" {
		out = r.Stdout + r.Stderr
	}
	return verify.Outcome{ExitCode: r.ExitCode, Output: out, Duration: r.Duration,
		TimedOut: r.TimedOut || r.Killed, Truncated: r.Truncated, OutputStopped: r.OutputStopped, OOMKilled: r.OOMKilled}
}
