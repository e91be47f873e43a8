package eval

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/selfcode/selfcode/pipeline/testreport"
)

// heldBackFile is a held-back test file's text before and after its
// commit ("" where it does not exist).
type heldBackFile struct {
	Path          string
	Before, After string
}

// heldBackFiles are a task's held-back test files, read to tell which
// tests the commit added, removed or renamed when a run cannot: a suite
// that does not build or load names none of its tests.
type heldBackFiles []heldBackFile

// readHeldBack reads c's held-back source files (not fixtures: test names
// are in code) at its base and at the commit.
func readHeldBack(ctx context.Context, top string, c Candidate) (heldBackFiles, error) {
	var out heldBackFiles
	for _, ch := range c.Tests {
		if !sourceExts[path.Ext(ch.Path)] {
			continue
		}
		f := heldBackFile{Path: ch.Path}
		for _, side := range []struct {
			commit string
			text   *string
		}{{c.Base, &f.Before}, {c.Commit, &f.After}} {
			if side.commit == c.Commit && ch.Deleted {
				continue
			}
			_, data, err := blobAt(ctx, top, side.commit, ch.Path)
			if err != nil && !errors.Is(err, errNotInCommit) {
				return nil, err
			}
			*side.text = string(data)
		}
		out = append(out, f)
	}
	return out, nil
}

// names reports whether a held-back file names the test after the
// commit: its first name (a Go test function, a pytest function or class,
// a describe block or test title).
func (fs heldBackFiles) names(id testreport.ID) bool {
	parts := nameParts(id.Name)
	if len(parts) == 0 {
		return false
	}
	for _, f := range fs {
		if mentions(f.After, parts[0]) {
			return true
		}
	}
	return false
}

// removed reports whether the commit removed or renamed the test in a
// held-back file: a part of its name is in the file before the commit and
// not after it (a deleted file has nothing after it).
func (fs heldBackFiles) removed(id testreport.ID) bool {
	for _, p := range nameParts(id.Name) {
		for _, f := range fs {
			if mentions(f.Before, p) && !mentions(f.After, p) {
				return true
			}
		}
	}
	return false
}

// nameSeps join the parts of a test's name: Go subtests, pytest classes,
// Jest and Vitest describe blocks.
var nameSeps = strings.NewReplacer("/", "\x00", "::", "\x00", " › ", "\x00", " > ", "\x00")

// nameParts splits a test's name into what its source spells: each part
// without pytest's parameters ("test_x[1-2]"); Go writes a subtest's
// spaces as underscores, so those parts come with spaces too.
func nameParts(name string) []string {
	var out []string
	for _, p := range strings.Split(nameSeps.Replace(name), "\x00") {
		if i := strings.IndexByte(p, '['); i > 0 {
			p = p[:i]
		}
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		out = append(out, p)
		if strings.Contains(p, "_") {
			out = append(out, strings.ReplaceAll(p, "_", " "))
		}
	}
	return out
}

// mentions reports whether text holds word, not as part of a longer
// identifier.
func mentions(text, word string) bool {
	for i := 0; i <= len(text)-len(word); {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(word)
		if (j == 0 || !identByte(text[j-1])) && (end == len(text) || !identByte(text[end])) {
			return true
		}
		i = j + 1
	}
	return false
}

func identByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
