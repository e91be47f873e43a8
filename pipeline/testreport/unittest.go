package testreport

import (
	"regexp"
	"strings"
)

var (
	// "test_a (tests.test_x.TestC.test_a) ... ok" (Python 3.11+) or
	// "test_a (tests.test_x.TestC) ... FAIL"; the status may come on a
	// later line when the test prints or has a docstring.
	unittestLineRE   = regexp.MustCompile(`^(\w+) \(([\w.]+)\)(?: \.\.\. (.*))?$`)
	unittestStatusRE = regexp.MustCompile(`^(ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)$`)
	// "FAIL: test_a (tests.test_x.TestC.test_a)"
	unittestBlockRE = regexp.MustCompile(`^(FAIL|ERROR): (\w+) \(([\w.]+)\)`)
)

// ParseUnittest reads `python -m unittest -v` output. Suite is the test
// class ("tests.test_x.TestC"), Name the method. A module that fails to
// import (unittest's _FailedTest) is a Broken suite. nil when the output
// names no test.
func ParseUnittest(output string) *Report {
	rep := New(FormatUnittest)
	found := false
	var pending *ID
	lines := strings.Split(output, "\n")
	for _, raw := range lines {
		line := strings.TrimRight(raw, "\r ")
		if m := unittestLineRE.FindStringSubmatch(line); m != nil {
			id := unittestID(m[1], m[2])
			if m[3] == "" {
				pending = &id
				continue
			}
			pending = nil
			found = unittestRecord(rep, id, m[3]) || found
			continue
		}
		if pending != nil {
			// The status closes a line of the test's own printing: "… ok".
			word := line
			if i := strings.LastIndex(line, " ... "); i >= 0 {
				word = line[i+5:]
			}
			if unittestStatusRE.MatchString(word) {
				found = unittestRecord(rep, *pending, word) || found
				pending = nil
			}
		}
	}
	if !found {
		return nil
	}
	var cur *ID
	for _, raw := range lines {
		line := strings.TrimRight(raw, "\r")
		switch {
		case unittestBlockRE.MatchString(line):
			m := unittestBlockRE.FindStringSubmatch(line)
			id := unittestID(m[2], m[3])
			cur = &id
			continue
		case strings.HasPrefix(line, "=====") || strings.HasPrefix(line, "Ran "):
			cur = nil
			continue
		case strings.HasPrefix(line, "-----") || cur == nil || strings.TrimSpace(line) == "":
			continue
		}
		if rep.IsBroken(cur.Name) && cur.Suite == "" {
			rep.AddError(line)
		} else {
			rep.AddOutput(*cur, line)
		}
	}
	return rep.finish()
}

// unittestID names a test from unittest's "name (where)".
func unittestID(name, where string) ID {
	where = strings.TrimSuffix(where, "."+name)
	if strings.HasPrefix(where, "unittest.loader.") || strings.HasPrefix(where, "unittest.loader.ModuleImportFailure") {
		return ID{Name: name} // a module that failed to load
	}
	return ID{Suite: where, Name: name}
}

func unittestRecord(rep *Report, id ID, word string) bool {
	if id.Suite == "" {
		rep.Broken = append(rep.Broken, id.Name)
		rep.Suites[id.Name] = Fail
		return true
	}
	switch {
	case word == "ok" || word == "unexpected success":
		rep.Set(id, Pass)
	case word == "FAIL" || word == "ERROR":
		rep.Set(id, Fail)
	case strings.HasPrefix(word, "skipped") || word == "expected failure":
		rep.Set(id, Skip)
	default:
		return false
	}
	return true
}
