package testreport

import (
	"regexp"
	"strings"
)

var (
	// "PASSED tests/test_x.py::test_a", "FAILED tests/test_x.py::T::t - AssertionError: …", "ERROR tests/test_y.py"
	pytestSummaryRE = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+\.py(?:::\S.*?)?)(?: - .*)?$`)
	// "tests/test_x.py::test_a PASSED                   [ 50%]"
	pytestVerboseRE = regexp.MustCompile(`^(\S+\.py::\S.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?: \(.*\))?\s+\[\s*\d+%\]$`)
	// "____ TestGroup.test_inner ____", "____ ERROR collecting tests/test_y.py ____"
	pytestHeaderRE = regexp.MustCompile(`^_{3,} (.+?) _{3,}$`)
)

// ParsePytest reads pytest's printed output: the short test summary of
// `pytest -rA` and the per-test lines of `pytest -v`. Suite is the test
// file, Name the rest of the node id ("TestClass::test_y[1]"). A module
// that fails to import ("ERROR tests/test_y.py") is a Broken suite. The
// FAILURES section gives each failing test its output. nil when the
// output names no test.
func ParsePytest(output string) *Report {
	rep := New(FormatPytest)
	found := false
	lines := strings.Split(output, "\n")
	for _, raw := range lines {
		line := strings.TrimRight(raw, "\r ")
		var word, nodeid string
		if m := pytestSummaryRE.FindStringSubmatch(line); m != nil {
			word, nodeid = m[1], m[2]
		} else if m := pytestVerboseRE.FindStringSubmatch(line); m != nil {
			word, nodeid = m[2], m[1]
		} else {
			continue
		}
		found = true
		suite, name, ok := strings.Cut(nodeid, "::")
		if !ok {
			if word == "ERROR" {
				rep.Broken = append(rep.Broken, suite)
				rep.Suites[suite] = Fail
			}
			continue
		}
		rep.Set(ID{Suite: suite, Name: name}, pytestStatus(word))
	}
	if !found {
		return nil
	}
	pytestSections(rep, lines)
	return rep.finish()
}

func pytestStatus(word string) Status {
	switch word {
	case "PASSED", "XPASS":
		return Pass
	case "SKIPPED", "XFAIL":
		return Skip
	}
	return Fail
}

// pytestSections gives failing tests the lines of their FAILURES block and
// keeps collection errors in Errors.
func pytestSections(rep *Report, lines []string) {
	// "TestGroup.test_inner" → the failing ID it names.
	byHeader := map[string][]ID{}
	for id, st := range rep.Tests {
		if st == Fail {
			h := strings.ReplaceAll(id.Name, "::", ".")
			byHeader[h] = append(byHeader[h], id)
		}
	}
	var cur []ID
	collecting := false
	for _, raw := range lines {
		line := strings.TrimRight(raw, "\r")
		if strings.HasPrefix(line, "====") {
			cur, collecting = nil, false
			continue
		}
		if m := pytestHeaderRE.FindStringSubmatch(line); m != nil {
			cur = byHeader[m[1]]
			collecting = strings.HasPrefix(m[1], "ERROR collecting ")
			continue
		}
		if collecting {
			rep.AddError(line)
		}
		if len(cur) == 1 && strings.TrimSpace(line) != "" {
			rep.AddOutput(cur[0], line)
		}
	}
}
