package testreport

import (
	"bytes"
	"fmt"
	"strings"

	junit "github.com/joshdk/go-junit"
)

// ParseJUnit reads a JUnit XML report (pytest --junitxml, jest-junit,
// mocha-junit-reporter, Gradle, …). A test is named by its classname
// (Suite) and name. A testcase with an error and no classname is how
// pytest reports a module that could not be collected: a Broken suite, not
// a test. It returns nil and no error when the document holds no testcase
// and no suite error.
func ParseJUnit(data []byte) (*Report, error) {
	if !bytes.Contains(data, []byte("<testsuite")) && !bytes.Contains(data, []byte("<testcase")) {
		return nil, fmt.Errorf("no <testsuite> or <testcase> element")
	}
	suites, err := junit.Ingest(data)
	if err != nil {
		return nil, fmt.Errorf("junit xml: %w", err)
	}
	rep := New(FormatJUnit)
	var walk func(s junit.Suite)
	walk = func(s junit.Suite) {
		for _, t := range s.Tests {
			addJUnitTest(rep, s.Name, t)
		}
		for _, sub := range s.Suites {
			walk(sub)
		}
	}
	for _, s := range suites {
		walk(s)
	}
	if rep.Len() == 0 && len(rep.Broken) == 0 {
		return nil, nil
	}
	return rep.finish(), nil
}

func addJUnitTest(rep *Report, suiteName string, t junit.Test) {
	name := strings.TrimSpace(t.Name)
	suite := strings.TrimSpace(t.Classname)
	if name == "" {
		return
	}
	text := ""
	if t.Error != nil {
		text = t.Error.Error()
		if e, ok := t.Error.(junit.Error); ok && e.Message != "" && !strings.Contains(text, e.Message) {
			text = e.Message + "\n" + text
		}
	}
	if suite == "" && t.Status == junit.StatusError {
		// pytest: "collection failure" of module <name>.
		rep.Broken = append(rep.Broken, name)
		rep.Suites[name] = Fail
		for _, l := range strings.Split(text, "\n") {
			rep.AddError(l)
		}
		return
	}
	if suite == "" {
		suite = strings.TrimSpace(suiteName)
	}
	id := ID{Suite: suite, Name: name}
	switch t.Status {
	case junit.StatusPassed:
		rep.Set(id, Pass)
	case junit.StatusSkipped:
		rep.Set(id, Skip)
	default:
		rep.Set(id, Fail)
		for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			rep.AddOutput(id, l)
		}
	}
}
