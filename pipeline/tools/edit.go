package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// viewWindow is how many lines one view shows.
const viewWindow = 100

// maxEntries caps a directory listing.
const maxEntries = 300

func (t *Tools) view(arg string, start, end int) (Result, error) {
	tg, err := t.resolve(arg, forRead)
	if err != nil {
		return Result{}, err
	}
	fi, err := os.Stat(tg.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, fail(OutcomeError, "%s does not exist", tg.rel)
	}
	if err != nil {
		return Result{}, fmt.Errorf("stat %s: %w", tg.rel, err)
	}
	if fi.IsDir() {
		return t.list(tg)
	}
	data, _, err := readFile(tg)
	if err != nil {
		return Result{}, err
	}
	if isBinary(data) {
		return Result{Output: fmt.Sprintf("%s is a binary file (%d bytes); not shown.", tg.rel, len(data)), Outcome: OutcomeOK}, nil
	}
	lines := splitLines(string(data))
	n := len(lines)
	if n == 0 {
		return Result{Output: fmt.Sprintf("%s is empty (0 lines).", tg.rel), Outcome: OutcomeOK}, nil
	}
	if start < 0 || end < 0 {
		return Result{}, fail(OutcomeError, "start_line and end_line must be positive")
	}
	if start == 0 {
		start = 1
	}
	if start > n {
		return Result{}, fail(OutcomeError, "start_line %d is past the end of %s, which has %d lines", start, tg.rel, n)
	}
	if end != 0 && end < start {
		return Result{}, fail(OutcomeError, "end_line %d is before start_line %d", end, start)
	}
	note := ""
	if end == 0 || end > n {
		end = n
	}
	if end-start+1 > viewWindow {
		if end != n || start != 1 {
			note = fmt.Sprintf(" (at most %d lines are shown at a time)", viewWindow)
		}
		end = start + viewWindow - 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: lines %d-%d of %d%s\n", tg.rel, start, end, n, note)
	b.WriteString(numbered(lines, start-1, end))
	if end < n {
		fmt.Fprintf(&b, "(%d more lines; view with start_line=%d to see more)\n", n-end, end+1)
	}
	return Result{Output: b.String(), Outcome: OutcomeOK}, nil
}

// list shows a directory's entries, directories with a trailing slash,
// leaving out what the policy hides.
func (t *Tools) list(tg target) (Result, error) {
	entries, err := os.ReadDir(tg.abs)
	if err != nil {
		return Result{}, fmt.Errorf("list %s: %w", tg.rel, err)
	}
	var names []string
	for _, e := range entries {
		rel := e.Name()
		if tg.rel != "." {
			rel = tg.rel + "/" + e.Name()
		}
		if !t.policy.CanRead(rel) || strings.HasPrefix(e.Name(), ".selfcode-tmp-") {
			continue
		}
		name := e.Name()
		switch {
		case e.IsDir():
			name += "/"
		case e.Type()&fs.ModeSymlink != 0:
			name += "@"
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: directory with %d entries\n", tg.rel, len(names))
	for i, n := range names {
		if i == maxEntries {
			fmt.Fprintf(&b, "… %d more entries\n", len(names)-maxEntries)
			break
		}
		b.WriteString(n + "\n")
	}
	return Result{Output: b.String(), Outcome: OutcomeOK}, nil
}

// loadForEdit reads an existing text file the model may change.
func (t *Tools) loadForEdit(arg string) (target, []byte, fs.FileMode, error) {
	tg, err := t.resolve(arg, forWrite)
	if err != nil {
		return target{}, nil, 0, err
	}
	data, fi, err := readFile(tg)
	if err != nil {
		return target{}, nil, 0, err
	}
	if isBinary(data) {
		return target{}, nil, 0, fail(OutcomeError, "%s is a binary file; it cannot be edited with text tools", tg.rel)
	}
	return tg, data, fi.Mode().Perm(), nil
}

func (t *Tools) strReplace(ctx context.Context, arg, old, new string) (Result, error) {
	if strings.TrimSpace(old) == "" {
		return Result{}, fail(OutcomeError, "old_str must contain more than whitespace")
	}
	if old == new {
		return Result{}, fail(OutcomeError, "old_str and new_str are identical; nothing to do")
	}
	tg, data, mode, err := t.loadForEdit(arg)
	if err != nil {
		return Result{}, err
	}
	content := string(data)
	r := replaceOnce(content, old, new)
	switch {
	case len(r.lines) > 1:
		return Result{}, fail(OutcomeNotUnique, "old_str occurs %d times in %s, at lines %s; include more surrounding lines so it matches exactly one place",
			len(r.lines), tg.rel, joinInts(r.lines))
	case len(r.lines) == 0:
		return Result{}, fail(OutcomeNoMatch, "%s", noMatchMessage(tg.rel, content, old))
	}
	note := ""
	if r.fuzzy {
		note = " (matched ignoring trailing whitespace and line endings)"
	}
	return t.apply(ctx, tg, data, true, []byte(r.content), mode, "replaced 1 occurrence at line "+fmt.Sprint(r.lines[0])+note)
}

func noMatchMessage(rel, content, old string) string {
	start, size, score := closest(content, old)
	var b strings.Builder
	fmt.Fprintf(&b, "old_str was not found in %s.", rel)
	if score < 0.3 || size == 0 {
		b.WriteString(" Nothing similar was found either; view the file and copy the text exactly.")
		return b.String()
	}
	lines := splitLines(content)
	want := strings.Split(strings.TrimSuffix(toLF(old), "\n"), "\n")
	hint := ""
	if size == len(want) {
		sameIgnoringIndent := true
		for j := 0; j < size; j++ {
			if strings.TrimSpace(lines[start+j].text) != strings.TrimSpace(want[j]) {
				sameIgnoringIndent = false
				break
			}
		}
		if sameIgnoringIndent {
			hint = " The text matches except for indentation: copy the leading whitespace exactly (tabs vs spaces)."
		}
	}
	fmt.Fprintf(&b, " The most similar region (lines %d-%d, %.0f%% similar) is:\n", start+1, start+size, score*100)
	from, to := start-2, start+size+2
	if to-from > 40 {
		to = from + 40
	}
	b.WriteString(numbered(lines, from, to))
	b.WriteString("Copy old_str exactly from the file (without the line numbers)." + hint)
	return b.String()
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func (t *Tools) insert(ctx context.Context, arg string, after int, text string) (Result, error) {
	if text == "" {
		return Result{}, fail(OutcomeError, "text is empty; nothing to insert")
	}
	tg, data, mode, err := t.loadForEdit(arg)
	if err != nil {
		return Result{}, err
	}
	content := string(data)
	lines := splitLines(content)
	if after < 0 || after > len(lines) {
		return Result{}, fail(OutcomeError, "line %d is out of range: %s has %d lines (use 0 to insert at the top, %d to append)", after, tg.rel, len(lines), len(lines))
	}
	eol := eolStyle(content)
	ins := toStyle(toLF(text), eol)
	if !strings.HasSuffix(ins, "\n") {
		ins += eol
	}
	off := 0
	if after > 0 {
		l := lines[after-1]
		off = l.start + len(l.text) + len(l.eol)
		if l.eol == "" {
			ins = eol + ins
		}
	}
	return t.apply(ctx, tg, data, true, []byte(content[:off]+ins+content[off:]), mode, fmt.Sprintf("inserted %d lines after line %d", strings.Count(ins, "\n"), after))
}

func (t *Tools) create(ctx context.Context, arg, content string) (Result, error) {
	tg, err := t.resolve(arg, forWrite)
	if err != nil {
		return Result{}, err
	}
	if strings.HasSuffix(arg, "/") {
		return Result{}, fail(OutcomeError, "%s names a directory; create makes files (directories are made as needed)", arg)
	}
	if _, err := os.Lstat(tg.abs); err == nil {
		return Result{}, fail(OutcomeError, "%s already exists; edit it with str_replace or insert", tg.rel)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Result{}, fail(OutcomeError, "%s cannot be created: a parent is not a directory", tg.rel)
	}
	if len(content) > maxEditSize {
		return Result{}, fail(OutcomeError, "content is %d bytes; at most %d are allowed", len(content), maxEditSize)
	}
	return t.apply(ctx, tg, nil, false, []byte(content), 0o644, "created")
}

func (t *Tools) delete(arg string) (Result, error) {
	tg, err := t.resolve(arg, forDelete)
	if err != nil {
		return Result{}, err
	}
	fi, err := os.Lstat(tg.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, fail(OutcomeError, "%s does not exist", tg.rel)
	}
	if err != nil {
		return Result{}, fmt.Errorf("stat %s: %w", tg.rel, err)
	}
	if !fi.Mode().IsRegular() {
		return Result{}, fail(OutcomeError, "%s is not a regular file; only files can be deleted", tg.rel)
	}
	data, _, err := readFile(tg)
	if err != nil {
		return Result{}, err
	}
	before := stateOf(data, true)
	if err := t.admit(tg.rel, before, fileState{}); err != nil {
		return Result{}, err
	}
	if err := os.Remove(tg.abs); err != nil {
		return Result{}, fmt.Errorf("delete %s: %w", tg.rel, err)
	}
	t.record(tg.rel, before, fileState{})
	return Result{Output: fmt.Sprintf("OK: deleted %s.", tg.rel), Changed: []string{tg.rel}, Outcome: OutcomeApplied}, nil
}

// apply checks and writes new content for tg, then echoes the changed
// region. before is nil and existed false for a new file.
func (t *Tools) apply(ctx context.Context, tg target, before []byte, existed bool, after []byte, mode fs.FileMode, what string) (Result, error) {
	formatted := false
	switch {
	case strings.HasSuffix(tg.rel, ".go"):
		var err error
		if after, formatted, err = checkGo(tg.rel, before, after); err != nil {
			return Result{}, err
		}
	case t.syntax != nil && t.syntax.Checks(tg.rel):
		if err := t.checkSyntax(ctx, tg.rel, before, after); err != nil {
			return Result{}, err
		}
	}
	if existed && bytes.Equal(before, after) {
		return Result{}, fail(OutcomeError, "the edit leaves %s unchanged", tg.rel)
	}
	prev, next := stateOf(before, existed), stateOf(after, true)
	if err := t.admit(tg.rel, prev, next); err != nil {
		return Result{}, err
	}
	if err := writeFile(tg, after, mode); err != nil {
		return Result{}, err
	}
	t.record(tg.rel, prev, next)
	var b strings.Builder
	fmt.Fprintf(&b, "OK: %s: %s", tg.rel, what)
	if formatted {
		b.WriteString("; gofmt applied")
	}
	b.WriteString(". Changed region now reads:\n")
	b.WriteString(snippet(string(before), string(after)))
	return Result{Output: b.String(), Changed: []string{tg.rel}, Outcome: OutcomeApplied}, nil
}
