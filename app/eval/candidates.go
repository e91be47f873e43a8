package eval

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/selfcode/selfcode/app/gitops"
)

// Change is one path a commit changed against its first parent.
type Change struct {
	Path    string `json:"path"`
	Deleted bool   `json:"deleted,omitempty"`
}

// Candidate is a commit that changes source and test files together.
type Candidate struct {
	Commit string
	Base   string   // the first parent
	Tests  []Change // held back from the model
	Source []string // the source files it changed (for the record)
}

// Candidates lists up to limit commits of the history of HEAD in dir,
// newest first, following first parents (the repository's own line of
// changes; a merge's change is its diff against its first parent), that
// change at least one source file and one test file. Root commits have no
// base and are left out. It reads the log as one stream and stops once it
// has found limit.
func Candidates(ctx context.Context, dir string, limit int) ([]Candidate, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := gitops.Command(ctx, dir, "log", "--first-parent", "--diff-merges=first-parent", "--no-renames",
		"--name-status", "-z", "--format=%x01%H %P", "HEAD", "--")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git log: %w", err)
	}
	found, perr := parseLog(out, limit)
	if perr == nil && len(found) >= limit {
		cancel() // enough: stop git reading further
		io.Copy(io.Discard, out)
		cmd.Wait()
		return found, nil
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("git log: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return found, perr
}

// parseLog reads `git log --name-status -z --format=%x01%H %P` output:
// each commit is a token "\x01<sha> <parents>", then (status, path) token
// pairs, every token ended by NUL (a header is followed by "\n").
func parseLog(r io.Reader, limit int) ([]Candidate, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		found   []Candidate
		cur     *Candidate
		status  string
		expectP bool // the next token is a path
	)
	flush := func() {
		if cur != nil && cur.Base != "" && len(cur.Tests) > 0 && len(cur.Source) > 0 {
			found = append(found, *cur)
		}
		cur = nil
	}
	for len(found) < limit {
		tok, err := br.ReadString(0)
		if errors.Is(err, io.EOF) && tok == "" {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		tok = strings.TrimSuffix(tok, "\x00")
		if expectP {
			expectP = false
			if cur != nil {
				add(cur, status, tok)
			}
			continue
		}
		tok = strings.TrimPrefix(tok, "\n")
		if strings.HasPrefix(tok, "\x01") {
			flush()
			f := strings.Fields(strings.TrimSpace(tok[1:]))
			if len(f) == 0 {
				return nil, fmt.Errorf("git log: malformed commit header %q", tok)
			}
			cur = &Candidate{Commit: f[0]}
			if len(f) > 1 {
				cur.Base = f[1]
			}
			continue
		}
		if tok == "" {
			continue
		}
		status, expectP = tok, true
	}
	flush()
	if len(found) > limit {
		found = found[:limit]
	}
	return found, nil
}

// add records one changed path of c.
func add(c *Candidate, status, path string) {
	switch {
	case IsTestPath(path):
		c.Tests = append(c.Tests, Change{Path: path, Deleted: status == "D"})
	case IsSourcePath(path):
		c.Source = append(c.Source, path)
	}
}

// message returns a commit's full message.
func message(ctx context.Context, dir, commit string) (string, error) {
	out, err := git(ctx, dir, "show", "-s", "--format=%B", commit, "--")
	return strings.TrimSpace(string(out)), err
}
