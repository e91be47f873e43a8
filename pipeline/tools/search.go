package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/selfcode/selfcode/internal/utf8cut"
)

// Search limits.
const (
	maxHits       = 50
	maxHitLen     = 200
	maxScanned    = 5000 // matching lines read before git is stopped
	searchTimeout = 30 * time.Second
)

// search runs git grep over the checkout. The pattern and path travel as
// separate argv entries (never through a shell), the pattern after -e and
// the path after --, with literal pathspecs so ":(...)" magic means
// nothing. --no-index searches the tree as files and --git-dir=/dev/null
// keeps git from reading any repository config inside the checkout.
// Ignored files (.gitignore) are skipped; hits in paths the policy hides,
// and in symlinks, are dropped.
func (t *Tools) search(ctx context.Context, pattern, arg string) (Result, error) {
	if pattern == "" {
		return Result{}, fail(OutcomeError, "pattern is empty")
	}
	if strings.ContainsAny(pattern, "\x00\n") {
		return Result{}, fail(OutcomeError, "pattern must be a single line")
	}
	if arg == "" {
		arg = "."
	}
	tg, err := t.resolve(arg, forRead)
	if err != nil {
		return Result{}, err
	}
	if _, err := os.Stat(tg.abs); errors.Is(err, fs.ErrNotExist) {
		return Result{}, fail(OutcomeError, "%s does not exist", tg.rel)
	}
	hits, total, err := t.grep(ctx, []string{"-E", "-e", pattern}, tg.rel)
	note := ""
	if errors.Is(err, errBadPattern) {
		note = "(the pattern is not a valid extended regular expression; searched for it as fixed text)\n"
		hits, total, err = t.grep(ctx, []string{"-F", "-e", pattern}, tg.rel)
	}
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	b.WriteString(note)
	where := "the repository"
	if tg.rel != "." {
		where = tg.rel
	}
	if total == 0 {
		fmt.Fprintf(&b, "No matches for %q in %s.", pattern, where)
		return Result{Output: b.String(), Outcome: OutcomeOK}, nil
	}
	for _, h := range hits {
		b.WriteString(h + "\n")
	}
	switch {
	case total > maxScanned:
		fmt.Fprintf(&b, "(showing the first %d of more than %d matches; narrow the pattern or the path)\n", len(hits), maxScanned)
	case total > len(hits):
		fmt.Fprintf(&b, "(showing the first %d of %d matches; narrow the pattern or the path)\n", len(hits), total)
	}
	return Result{Output: b.String(), Outcome: OutcomeOK}, nil
}

var errBadPattern = errors.New("invalid pattern")

// grep returns up to maxHits "file:line: text" hits the policy lets the
// model see, and how many such hits it saw in total (more than maxScanned
// when it stopped early).
func (t *Tools) grep(ctx context.Context, how []string, rel string) ([]string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	args := []string{"--git-dir=" + os.DevNull, "--literal-pathspecs",
		"grep", "--no-index", "--exclude-standard", "--no-color", "-n", "-I", "-z"}
	args = append(args, how...)
	args = append(args, "--", rel)
	cmd := exec.CommandContext(ctx, t.git, args...)
	cmd.Dir = t.root
	// A minimal environment: no server secrets, no user or system git
	// config that could change what grep does.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.DevNull, "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_TERMINAL_PROMPT=0"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, fmt.Errorf("search: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("search: start git: %w", err)
	}
	var hits []string
	total := 0
	visible := map[string]bool{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	stopped := false
	for sc.Scan() {
		parts := bytes.SplitN(sc.Bytes(), []byte{0}, 3)
		if len(parts) != 3 {
			continue
		}
		file := string(parts[0])
		ok, seen := visible[file]
		if !seen {
			ok = t.visible(file)
			visible[file] = ok
		}
		if !ok {
			continue
		}
		total++
		if len(hits) < maxHits {
			text := strings.TrimRight(string(parts[2]), "\r")
			if len(text) > maxHitLen {
				text = utf8cut.Cut(text, maxHitLen) + " …"
			}
			hits = append(hits, fmt.Sprintf("%s:%s: %s", file, parts[1], text))
		}
		if total > maxScanned {
			stopped = true
			cancel()
			break
		}
	}
	if sc.Err() != nil {
		cancel() // an unreadable line: stop git rather than leave it blocked
	}
	werr := cmd.Wait()
	if stopped {
		return hits, total, nil
	}
	if ctx.Err() != nil {
		return nil, 0, fail(OutcomeError, "search timed out after %s; narrow the pattern or the path", searchTimeout)
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ee.ExitCode() == 1 && total == 0 {
			return nil, 0, nil // no match
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "-e option") || strings.Contains(msg, "regex") || strings.Contains(msg, "Unmatched") || strings.Contains(msg, "Invalid") {
			return nil, 0, errBadPattern
		}
		if ee.ExitCode() == 1 {
			return hits, total, nil
		}
		return nil, 0, fail(OutcomeError, "search failed: %s", firstLine(msg))
	}
	if werr != nil {
		return nil, 0, fmt.Errorf("search: %w", werr)
	}
	return hits, total, nil
}

// visible reports whether a file git grep matched may be shown: readable
// by policy and reached without a symlink.
func (t *Tools) visible(file string) bool {
	if !t.policy.CanRead(file) {
		return false
	}
	tg, err := t.resolve(file, forRead)
	if err != nil {
		return false
	}
	fi, err := os.Lstat(tg.abs)
	return err == nil && fi.Mode().IsRegular()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
