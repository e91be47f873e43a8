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

// names reports whether a held-back file of the test's suite (of).names
// the test after the commit: its first name (a Go test function, a pytest
// function or class, a describe block or test title).
func (fs heldBackFiles) names(id testreport.ID) bool {
	parts := nameParts(id.Name)
	if len(parts) == 0 {
		return false
	}
	for _, f := range fs.of(id.Suite) {
		if mentions(f.After, parts[0]) {
			return true
		}
	}
	return false
}

// removed reports whether the commit removed or renamed the test in a
// held-back file of its suite (of): the innermost part of its name — the
// test itself, not a describe block, class or parent test it shares with
// others — is in the file before the commit and not after it (a deleted
// file has nothing after it). A title as common as "works" elsewhere in
// the held-back files excuses nothing.
func (fs heldBackFiles) removed(id testreport.ID) bool {
	for _, p := range innermost(id.Name) {
		for _, f := range fs.of(id.Suite) {
			if mentions(f.Before, p) && !mentions(f.After, p) {
				return true
			}
		}
	}
	return false
}

// of are the held-back files that hold the tests of suite, where that is
// known: a suite that is a test file (pytest, Jest, mocha) is that file
// alone, and none when it is not held back; a Go package's import path
// ends with its files' directory, a Python module's dotted name (and a
// class in it) begins with its file's path. A suite none of them names
// (a Go package at the module's root, a JUnit classname) may be in any.
func (fs heldBackFiles) of(suite string) heldBackFiles {
	if suite == "" {
		return fs
	}
	var out heldBackFiles
	for _, f := range fs {
		if holds(f.Path, suite) {
			out = append(out, f)
		}
	}
	if out == nil && !sourceExts[path.Ext(suite)] {
		return fs
	}
	return out
}

// holds reports whether the file at p holds tests of suite.
func holds(p, suite string) bool {
	if suite == p || strings.HasSuffix(suite, "/"+p) {
		return true // the test file itself (relative, or absolute)
	}
	switch path.Ext(p) {
	case ".go":
		dir := path.Dir(p)
		return dir != "." && (suite == dir || strings.HasSuffix(suite, "/"+dir))
	case ".py":
		mod := strings.ReplaceAll(strings.TrimSuffix(p, ".py"), "/", ".")
		return suite == mod || strings.HasPrefix(suite, mod+".")
	}
	return false
}

// nameSeps join the parts of a test's name: Go subtests, pytest classes,
// Jest and Vitest describe blocks.
var nameSeps = strings.NewReplacer("/", "\x00", "::", "\x00", " › ", "\x00", " > ", "\x00")

// nameParts splits a test's name into what its source spells, outermost
// first: each part's spellings.
func nameParts(name string) []string {
	var out []string
	for _, p := range strings.Split(nameSeps.Replace(name), "\x00") {
		out = append(out, spellings(p)...)
	}
	return out
}

// innermost is the spellings of the last part of a test's name: the test
// itself.
func innermost(name string) []string {
	parts := strings.Split(nameSeps.Replace(name), "\x00")
	for i := len(parts) - 1; i >= 0; i-- {
		if sp := spellings(parts[i]); len(sp) > 0 {
			return sp
		}
	}
	return nil
}

// spellings are how a part of a test's name may stand in its source:
// without pytest's parameters ("test_x[1-2]"); Go writes a subtest's
// spaces as underscores, so a part with underscores comes with spaces
// too. None for an empty part.
func spellings(p string) []string {
	if i := strings.IndexByte(p, '['); i > 0 {
		p = p[:i]
	}
	if p = strings.TrimSpace(p); p == "" {
		return nil
	}
	if strings.Contains(p, "_") {
		return []string{p, strings.ReplaceAll(p, "_", " ")}
	}
	return []string{p}
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
