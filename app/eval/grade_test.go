package eval

import (
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/pipeline/testreport"
	"github.com/selfcode/selfcode/pipeline/verify"
)

const pkg = "example.com/calc"

// tests is a command's test results as go test -json gives them:
// "TestX" passes, "!TestX" fails, "~TestX" is skipped, "#pkg" is a suite
// that does not build; the package fails when a test fails.
func tests(name string, specs ...string) verify.CommandResult {
	c := verify.CommandResult{Name: name, Passed: true, Tests: testreport.New(testreport.FormatGoJSON)}
	for _, s := range specs {
		switch s[0] {
		case '!':
			c.Tests.Tests[testreport.ID{Suite: pkg, Name: s[1:]}] = testreport.Fail
			c.Tests.Suites[pkg] = testreport.Fail
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
	if _, ok := c.Tests.Suites[pkg]; !ok && c.Tests.Len() > 0 {
		c.Tests.Suites[pkg] = testreport.Pass
	}
	return c
}

// jest is a jest command's results: "file:title" passes, "!file:title"
// fails; a file fails when a test in it does.
func jest(specs ...string) verify.CommandResult {
	c := verify.CommandResult{Name: "test", Passed: true, Tests: testreport.New(testreport.FormatJest)}
	for _, s := range specs {
		st := testreport.Pass
		if s[0] == '!' {
			st, s, c.Passed = testreport.Fail, s[1:], false
		}
		file, title, _ := strings.Cut(s, ":")
		c.Tests.Tests[testreport.ID{Suite: file, Name: title}] = st
		if c.Tests.Suites[file] != testreport.Fail {
			c.Tests.Suites[file] = st
		}
	}
	return c
}

// calcTest is the held-back calc_test.go of most cases: TestNew is new,
// TestT gains a "new" case.
var calcTest = heldBackFiles{{Path: "calc_test.go",
	Before: "func TestOld(t *testing.T) {}\nfunc TestSub(t *testing.T) {}\nfunc TestChanged(t *testing.T) {}\nfunc TestB(t *testing.T) {}\n" +
		"func TestT(t *testing.T) { for _, c := range []string{\"old\"} { t.Run(c, nil) } }\n",
	After: "func TestOld(t *testing.T) {}\nfunc TestSub(t *testing.T) {}\nfunc TestChanged(t *testing.T) {}\nfunc TestB(t *testing.T) {}\n" +
		"func TestT(t *testing.T) { for _, c := range []string{\"old\", \"new\"} { t.Run(c, nil) } }\nfunc TestNew(t *testing.T) {}\n"}}

func run(cmds ...verify.CommandResult) verify.Run { return verify.Run{Commands: cmds} }

func TestGrade(t *testing.T) {
	t.Parallel()
	vet := func(passed bool, diags ...string) verify.CommandResult {
		c := verify.CommandResult{Name: "vet", Kind: verify.BuildCommand, Passed: passed}
		for _, d := range diags {
			c.ExitCode = 1
			c.Diagnostics = append(c.Diagnostics, verify.Diagnostic{File: "calc_test.go", Line: 3, Message: d})
		}
		return c
	}
	// The commit renames TestSub and removes TestGone and the "old" case.
	renaming := heldBackFiles{{Path: "calc_test.go",
		Before: "func TestOld(t *testing.T) {}\nfunc TestSub(t *testing.T) {}\nfunc TestGone(t *testing.T) {}\n" +
			"func TestT(t *testing.T) { for _, c := range []string{\"old case\", \"kept\"} { t.Run(c, nil) } }\n",
		After: "func TestOld(t *testing.T) {}\nfunc TestSubtracts(t *testing.T) { Mul(1, 1) }\n" +
			"func TestT(t *testing.T) { for _, c := range []string{\"kept\"} { t.Run(c, nil) } }\n"}}
	// The commit deletes a test file of its own.
	deleting := heldBackFiles{{Path: "sub_test.go", Before: "func TestSub(t *testing.T) {}\n"}, calcTest[0]}
	// The commit renames util.test.js's "works" and adds a test there.
	utilJS := heldBackFiles{{Path: "src/util.test.js",
		Before: "describe(\"util\", () => {\n  test(\"works\", () => {});\n});\n",
		After:  "describe(\"util\", () => {\n  test(\"trims\", () => {});\n  test(\"pads\", () => {});\n});\n"}}
	cases := []struct {
		name                    string
		base, withTests, result verify.Run
		files                   heldBackFiles // default calcTest
		resolved                bool
		fixed, broken           []string
	}{
		{"a new test goes from failing to passing",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestOld", "TestNew")), nil,
			true, []string{"TestNew"}, nil},
		{"the new test still fails",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestOld", "!TestNew")), nil,
			false, nil, nil},
		// The model adds what infers a new command (a tsconfig.json gives a
		// type check): a command only one run has is judged, not a crash.
		{"a command only the result has",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestOld", "TestNew"), vet(true)), nil,
			true, []string{"TestNew"}, nil},
		// The model took away what a command was inferred from (deleted the
		// tsconfig.json, the build script): a check that passed on the base
		// no longer passes, so the task is not resolved.
		{"a command only the base has",
			run(tests("test", "TestOld"), vet(true)), run(tests("test", "TestOld", "!TestNew"), vet(true)), run(tests("test", "TestOld", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"command vet"}},
		{"fixed, but a passing test breaks",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "!TestOld", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"TestOld"}},
		{"a changed test that now fails on the base is held back",
			run(tests("test", "TestOld", "TestChanged")), run(tests("test", "TestOld", "!TestChanged")), run(tests("test", "TestOld", "TestChanged")), nil,
			true, []string{"TestChanged"}, nil},
		{"a test failing on the base without the held-back tests is not one of them",
			run(tests("test", "!TestFlaky")), run(tests("test", "!TestFlaky", "TestNew")), run(tests("test", "TestFlaky", "TestNew")), nil,
			false, nil, nil},
		{"a held-back test in a package with an old failure counts",
			run(tests("test", "TestOld", "!TestFlaky")), run(tests("test", "TestOld", "!TestFlaky", "!TestNew")), run(tests("test", "TestOld", "!TestFlaky", "TestNew")), nil,
			true, []string{"TestNew"}, nil},
		{"a test the model wrote is not a held-back test",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestOld", "!TestNew", "TestByTheModel")), nil,
			false, nil, nil},
		{"the held-back test stops its package building on the base: only the new test counts",
			run(tests("test", "TestOld")), run(tests("test", "#"+pkg)), run(tests("test", "TestOld", "TestNew")), nil,
			true, []string{"TestNew"}, nil},
		{"in a package the held-back test stops building, a test the model wrote does not count",
			run(tests("test", "TestOld")), run(tests("test", "#"+pkg)), run(tests("test", "TestOld", "!TestNew", "TestByTheModel")), nil,
			false, nil, nil},
		{"the package still does not build",
			run(tests("test", "TestOld")), run(tests("test", "#"+pkg)), run(tests("test", "#"+pkg)), nil,
			false, nil, []string{"TestOld"}},
		{"the held-back test stops its package building on the base; the fix adds the function and breaks an old test",
			run(tests("test", "TestOld", "TestSub")), run(tests("test", "#"+pkg)), run(tests("test", "TestOld", "!TestSub", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"TestSub"}},
		{"the held-back test stops its package building on the base; the fix deletes an old test",
			run(tests("test", "TestOld", "TestSub")), run(tests("test", "#"+pkg)), run(tests("test", "TestOld", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"TestSub"}},
		{"the held-back test stops its package building on the base and renames and removes old tests",
			run(tests("test", "TestOld", "TestSub", "TestGone", "TestT", "TestT/old_case", "TestT/kept")), run(tests("test", "#"+pkg)),
			run(tests("test", "TestOld", "TestSubtracts", "TestT", "TestT/kept")), renaming,
			true, []string{"TestSubtracts"}, nil},
		{"a renamed test that fails on the result is still broken",
			run(tests("test", "TestOld", "TestSub")), run(tests("test", "#"+pkg)), run(tests("test", "TestOld", "!TestSub", "TestSubtracts")), renaming,
			false, []string{"TestSubtracts"}, []string{"TestSub"}},
		{"a held-back test file the commit deletes",
			run(tests("test", "TestOld", "TestSub")), run(tests("test", "#"+pkg)), run(tests("test", "TestOld", "TestNew")), deleting,
			true, []string{"TestNew"}, nil},
		{"a test the held-back tests took away, shown by the run",
			run(tests("test", "TestOld", "TestGone")), run(tests("test", "TestOld", "TestNew")), run(tests("test", "TestOld", "TestNew")), nil,
			false, nil, nil},
		{"subtests count, not their parent",
			run(tests("test", "TestT", "TestT/old")), run(tests("test", "!TestT", "TestT/old", "!TestT/new")), run(tests("test", "TestT", "TestT/old", "TestT/new")), nil,
			true, []string{"TestT/new"}, nil},
		{"a test gone from the result is broken",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"TestOld"}},
		{"a test skipped on the result is broken",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(tests("test", "~TestOld", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"TestOld"}},
		{"a command that names no tests and passed on the base fails",
			run(vet(true), tests("test", "TestOld")), run(vet(true), tests("test", "TestOld", "!TestNew")), run(vet(false, "x"), tests("test", "TestOld", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"command vet"}},
		{"vet fails on the held-back tests until the fix, and with a new complaint after it",
			run(vet(true), tests("test", "TestOld")), run(vet(false, "undefined: New"), tests("test", "#"+pkg)),
			run(vet(false, "unreachable code"), tests("test", "TestOld", "TestNew")), nil,
			false, []string{"TestNew"}, []string{"command vet"}},
		{"vet fails on the held-back tests and on the result the same way",
			run(vet(true), tests("test", "TestOld")), run(vet(false, "undefined: New"), tests("test", "#"+pkg)),
			run(vet(false, "undefined: New"), tests("test", "TestOld", "!TestNew")), nil,
			false, nil, nil},
		{"a result whose tests timed out fixes nothing and breaks what passed",
			run(tests("test", "TestOld")), run(tests("test", "TestOld", "!TestNew")), run(verify.CommandResult{Name: "test", TimedOut: true}), nil,
			false, nil, []string{"TestOld"}},
		// Only the held-back file of a test's own suite tells that the
		// commit removed it: a title as common as "works" renamed in
		// another file does not excuse the model deleting parser's.
		{"a test the model deletes, whose title a held-back file of another suite drops",
			run(jest("src/parser.test.js:parser › works", "src/util.test.js:util › works")),
			run(jest("src/parser.test.js:parser › works", "src/util.test.js:util › trims", "!src/util.test.js:util › pads")),
			run(jest("src/util.test.js:util › trims", "src/util.test.js:util › pads")), utilJS,
			false, []string{"util › pads (src/util.test.js)"}, []string{"parser › works (src/parser.test.js)"}},
		{"the held-back file renames a test of its own suite",
			run(jest("src/parser.test.js:parser › works", "src/util.test.js:util › works")),
			run(jest("src/parser.test.js:parser › works", "src/util.test.js:util › trims", "!src/util.test.js:util › pads")),
			run(jest("src/parser.test.js:parser › works", "src/util.test.js:util › trims", "src/util.test.js:util › pads")), utilJS,
			true, []string{"util › pads (src/util.test.js)"}, nil},
		{"commands of one name are matched in order",
			run(tests("test", "TestOld"), tests("test", "TestB")), run(tests("test", "TestOld"), tests("test", "TestB", "!TestNew")),
			run(tests("test", "TestOld"), tests("test", "TestB", "TestNew")), nil,
			true, []string{"TestNew"}, nil},
	}
	for _, tc := range cases {
		files := tc.files
		if files == nil {
			files = calcTest
		}
		g := grade(tc.base, tc.withTests, tc.result, files)
		if g.Resolved != tc.resolved || !slices.Equal(names(g.Fixed), tc.fixed) || !slices.Equal(names(g.Broken), tc.broken) {
			t.Errorf("%s: resolved %v fixed %q broken %q; want %v %q %q", tc.name, g.Resolved, g.Fixed, g.Broken, tc.resolved, tc.fixed, tc.broken)
		}
	}
}

// Held-back files tell the tests a commit added, removed or renamed.
func TestHeldBackFiles(t *testing.T) {
	t.Parallel()
	py := heldBackFiles{{Path: "tests/test_calc.py",
		Before: "def test_add():\n    pass\n\n\nclass TestOps:\n    def test_sub(self):\n        pass\n",
		After:  "from calc import mul\n\n\ndef test_add():\n    pass\n\n\ndef test_mul():\n    pass\n"}}
	js := heldBackFiles{{Path: "calc.test.js",
		Before: "describe(\"calc\", () => {\n  test(\"adds\", () => {});\n  test(\"subtracts\", () => {});\n});\n",
		After:  "describe(\"calc\", () => {\n  test(\"adds\", () => {});\n  test(\"multiplies\", () => {});\n});\n"}}
	id := func(name string) testreport.ID { return testreport.ID{Suite: "s", Name: name} }
	for _, tc := range []struct {
		files          heldBackFiles
		name           string
		names, removed bool
	}{
		{py, "test_mul", true, false},
		{py, "test_mul[2-3]", true, false},
		{py, "test_add", true, false},
		{py, "TestOps::test_sub", false, true},
		{py, "test_div", false, false},
		{py, "test_mu", false, false}, // not part of a longer name
		{js, "calc › multiplies", true, false},
		{js, "calc › subtracts", true, true},
		{js, "calc › adds", true, false},
		{calcTest, "TestT/new", true, false},
		{calcTest, "TestNewer", false, false},
		{heldBackFiles{{Before: `t.Run("naïve façade", f)`}}, "TestReverse/naïve_façade", false, true},
	} {
		if got := tc.files.names(id(tc.name)); got != tc.names {
			t.Errorf("%s: names %v, want %v", tc.name, got, tc.names)
		}
		if got := tc.files.removed(id(tc.name)); got != tc.removed {
			t.Errorf("%s: removed %v, want %v", tc.name, got, tc.removed)
		}
	}

	// Where the suite names its held-back file (a test file, a Go
	// package's directory, a Python module), only that file counts, and
	// only the test's own (innermost) name.
	js2 := heldBackFiles{
		{Path: "src/parser.test.js", Before: "describe(\"parser\", () => {\n  test(\"works\", () => {});\n});\n",
			After: "describe(\"parser\", () => {\n  test(\"works\", () => {});\n});\n"},
		{Path: "src/util.test.js", Before: "describe(\"util\", () => {\n  test(\"works\", () => {});\n});\n",
			After: "describe(\"util\", () => {\n  test(\"trims\", () => {});\n});\n"},
	}
	go2 := heldBackFiles{
		{Path: "server/server_test.go", Before: "func TestServe(t *testing.T) {}\nfunc TestGone(t *testing.T) {}\n", After: "func TestServe(t *testing.T) {}\n"},
		{Path: "client/client_test.go", Before: "func TestGone(t *testing.T) {}\n", After: "func TestGone(t *testing.T) {}\nfunc TestDial(t *testing.T) {}\n"},
	}
	for _, tc := range []struct {
		files          heldBackFiles
		suite, name    string
		names, removed bool
	}{
		{js2, "src/parser.test.js", "parser › works", true, false},
		{js2, "src/util.test.js", "util › works", true, true},
		{js2, "/work/src/util.test.js", "util › works", true, true}, // an absolute path
		{js2, "src/other.test.js", "other › works", false, false},   // a test file not held back
		{go2, "example.com/m/client", "TestGone", true, false},
		{go2, "example.com/m/server", "TestGone", false, true},
		{go2, "example.com/m", "TestGone", true, true}, // the root package: any file may hold it
		{py, "tests.test_calc.TestOps", "test_sub", false, true},
		{py, "tests.other.TestOps", "test_sub", false, true}, // no file named: any
		{js, "calc.test.js", "calc › subtracts", true, true},
		// The describe block is renamed, the test's own title stays: only
		// the innermost name counts, so nothing is excused (an unresolved
		// grade at worst, never a wrongly resolved one).
		{heldBackFiles{{Path: "calc.test.js", Before: "describe(\"v1\", () => {\n  test(\"adds\", () => {});\n});\n",
			After: "describe(\"v2\", () => {\n  test(\"adds\", () => {});\n});\n"}}, "calc.test.js", "v1 › adds", false, false},
	} {
		id := testreport.ID{Suite: tc.suite, Name: tc.name}
		if got := tc.files.names(id); got != tc.names {
			t.Errorf("%s: names %v, want %v", id, got, tc.names)
		}
		if got := tc.files.removed(id); got != tc.removed {
			t.Errorf("%s: removed %v, want %v", id, got, tc.removed)
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
