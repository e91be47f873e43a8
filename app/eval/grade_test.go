package eval

import (
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/pipeline/testreport"
	"github.com/selfcode/selfcode/pipeline/verify"
)

const pkg = "example.com/calc"

// tests is a command's test results: "TestX" passes, "!TestX" fails,
// "~TestX" is skipped, "#pkg" is a suite that does not build.
func tests(name string, specs ...string) verify.CommandResult {
	c := verify.CommandResult{Name: name, Passed: true, Tests: testreport.New(testreport.FormatGoJSON)}
	for _, s := range specs {
		switch s[0] {
		case '!':
			c.Tests.Tests[testreport.ID{Suite: pkg, Name: s[1:]}] = testreport.Fail
			c.Passed = false
		case '~':
			c.Tests.Tests[testreport.ID{Suite: pkg, Name: s[1:]}] = testreport.Skip
		case '#':
			c.Tests.Broken = append(c.Tests.Broken, s[1:])
			c.Tests.Suites[s[1:]] = testreport.Fail
			c.Passed = false
		default:
			c.Tests.Tests[testreport.ID{Suite: pkg, Name: s}] = testreport.Pass
		}
	}
	return c
}

func run(cmds ...verify.CommandResult) verify.Run { return verify.Run{Commands: cmds} }

func TestGrade(t *testing.T) {
	t.Parallel()
	vet := func(passed bool) verify.CommandResult { return verify.CommandResult{Name: "vet", Passed: passed} }
	cases := []struct {
		name                    string
		base, withTests, result verify.Run
		resolved                bool
		fixed, broken           []string
	}{
		{"a new test goes from failing to passing",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestOld", "TestNew")),
			true, []string{"TestNew"}, nil},
		{"the new test still fails",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestOld", "!TestNew")),
			false, nil, nil},
		{"fixed, but a passing test breaks",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "!TestOld", "TestNew")),
			false, []string{"TestNew"}, []string{"TestOld"}},
		{"a changed test that now fails on the base is held back",
			run(tests("test", "TestOld", "TestChanged")), run(tests("test", "TestOld", "!TestChanged")), run(tests("test", "TestOld", "TestChanged")),
			true, []string{"TestChanged"}, nil},
		{"a test failing on the base without the held-back tests is not one of them",
			run(tests("test", "!TestFlaky")), run(tests("test", "!TestFlaky", "TestNew")), run(tests("test", "TestFlaky", "TestNew")),
			false, nil, nil},
		{"the held-back test stops its package building on the base: only the new test counts",
			run(tests("test", "TestOld")), run(tests("test", "#"+pkg)), run(tests("test", "TestOld", "TestNew")),
			true, []string{"TestNew"}, nil},
		{"the package still does not build",
			run(tests("test", "TestOld")), run(tests("test", "#"+pkg)), run(tests("test", "#"+pkg)),
			false, nil, nil},
		{"subtests count, not their parent",
			run(tests("test", "TestT", "TestT/old")), run(tests("test", "!TestT", "TestT/old", "!TestT/new")), run(tests("test", "TestT", "TestT/old", "TestT/new")),
			true, []string{"TestT/new"}, nil},
		{"a test gone from the result is broken",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestNew")),
			false, []string{"TestNew"}, []string{"TestOld"}},
		{"a test skipped on the result is broken",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "~TestOld", "TestNew")),
			false, []string{"TestNew"}, []string{"TestOld"}},
		{"a command that names no tests and passed on the base fails",
			run(vet(true), tests("test", "TestOld")), run(vet(true), tests("test", "TestOld", "!TestNew")), run(vet(false), tests("test", "TestOld", "TestNew")),
			false, []string{"TestNew"}, []string{"command vet"}},
		{"a result whose tests timed out fixes nothing and breaks what passed",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(verify.CommandResult{Name: "test", TimedOut: true}),
			false, nil, []string{"TestOld"}},
		{"commands of one name are matched in order",
			run(tests("test", "TestOld"), tests("test", "TestB")), run(tests("test", "TestOld"), tests("test", "TestB", "!TestNew")),
			run(tests("test", "TestOld"), tests("test", "TestB", "TestNew")),
			true, []string{"TestNew"}, nil},
	}
	for _, tc := range cases {
		g := grade(tc.base, tc.withTests, tc.result)
		if g.Resolved != tc.resolved || !slices.Equal(names(g.Fixed), tc.fixed) || !slices.Equal(names(g.Broken), tc.broken) {
			t.Errorf("%s: resolved %v fixed %q broken %q; want %v %q %q", tc.name, g.Resolved, g.Fixed, g.Broken, tc.resolved, tc.fixed, tc.broken)
		}
	}
}

// names drops the suite from "TestX (pkg)".
func names(labels []string) []string {
	var out []string
	for _, l := range labels {
		out = append(out, strings.TrimSuffix(l, " ("+pkg+")"))
	}
	return out
}

// A task is skipped when its held-back tests do not fail on the base.
func TestTestsFailOnBase(t *testing.T) {
	t.Parallel()
	vet := func(passed bool) verify.CommandResult {
		c := verify.CommandResult{Name: "vet", Kind: verify.BuildCommand, Passed: passed, ExitCode: 1}
		if !passed {
			c.Diagnostics = []verify.Diagnostic{{File: "calc_test.go", Line: 3, Message: "unusedresult"}}
		}
		return c
	}
	cases := []struct {
		name            string
		base, withTests verify.Run
		fail            bool
	}{
		{"a new test fails", run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), true},
		{"the tests do not build", run(tests("test", "TestOld")), run(tests("test", "#"+pkg)), true},
		{"the new test passes already", run(tests("test", "TestOld")), run(tests("test", "TestOld", "TestNew")), false},
		{"it fails there already", run(tests("test", "!TestOld")), run(tests("test", "!TestOld")), false},
		{"only vet complains", run(vet(true), tests("test", "TestOld")), run(vet(false), tests("test", "TestOld", "TestNew")), false},
	}
	for _, tc := range cases {
		if got := testsFailOnBase(tc.base, tc.withTests); got != tc.fail {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.fail)
		}
	}
}
