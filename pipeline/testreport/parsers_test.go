package testreport

import (
	"strings"
	"testing"
)

// Each parser on output captured from the real tool (testdata/gen.sh).
func TestParsersOnCapturedOutput(t *testing.T) {
	t.Parallel()
	const py = "test_calc.py"
	tests := []struct {
		name   string
		file   string
		parse  func(string) *Report
		want   map[ID]Status
		broken []string
		output map[ID]string // a line the failing test's output contains
		errors string        // a line Errors contains
	}{
		{"pytest -rA", "testdata/pytest/rA.txt", ParsePytest,
			map[ID]Status{{py, "test_add"}: Fail, {py, "test_sub"}: Pass, {py, "test_param[1]"}: Pass, {py, "test_param[2]"}: Pass,
				{py, "TestGroup::test_inner"}: Pass, {py, "TestCase::test_ok"}: Pass, {py, "TestCase::test_bad"}: Fail},
			nil, map[ID]string{{py, "test_add"}: "AssertionError: two and two", {py, "TestCase::test_bad"}: "AssertionError: 0 != 2"}, ""},
		{"pytest -v", "testdata/pytest/v.txt", ParsePytest,
			map[ID]Status{{py, "test_add"}: Fail, {py, "test_sub"}: Pass, {py, "test_param[1]"}: Pass, {py, "test_param[2]"}: Pass,
				{py, "test_skipped"}: Skip, {py, "TestGroup::test_inner"}: Pass, {py, "TestCase::test_ok"}: Pass,
				{py, "TestCase::test_bad"}: Fail, {py, "TestCase::test_later"}: Skip},
			nil, map[ID]string{{py, "test_add"}: "assert 0 == 4"}, ""},
		{"pytest collection error", "testdata/pytest/broken-rA.txt", ParsePytest,
			map[ID]Status{}, []string{"test_broken.py"}, nil, "No module named 'does_not_exist'"},
		{"unittest -v", "testdata/unittest/v.txt", ParseUnittest,
			map[ID]Status{{"test_calc.TestCase", "test_bad"}: Fail, {"test_calc.TestCase", "test_later"}: Skip, {"test_calc.TestCase", "test_ok"}: Pass},
			nil, map[ID]string{{"test_calc.TestCase", "test_bad"}: "AssertionError: 0 != 2"}, ""},
		{"unittest import error", "testdata/unittest/broken-v.txt", ParseUnittest,
			map[ID]Status{}, []string{"test_broken"}, nil, "No module named 'does_not_exist'"},
		{"jest --json", "testdata/jest/report.json", func(s string) *Report { return ParseJestJSON([]byte(s)) },
			map[ID]Status{{"js/calc.test.js", "add › adds"}: Fail, {"js/calc.test.js", "add › zero"}: Pass, {"js/calc.test.js", "add › nested › deep"}: Pass,
				{"js/calc.test.js", "add › later"}: Skip, {"js/calc.test.js", "top level"}: Pass},
			nil, map[ID]string{{"js/calc.test.js", "add › adds"}: "Expected: 4"}, ""},
		{"jest suite that fails to run", "testdata/jest/broken.json", func(s string) *Report { return ParseJestJSON([]byte(s)) },
			map[ID]Status{{"jsbroken/fine.test.js", "fine"}: Pass}, []string{"jsbroken/broken.test.js"}, nil, "Cannot find module './does-not-exist'"},
		{"mocha json file", "testdata/mocha/report.json", func(s string) *Report { return ParseMochaJSON([]byte(s)) },
			map[ID]Status{{"js/calc.mocha.js", "add adds"}: Fail, {"js/calc.mocha.js", "add zero"}: Pass, {"js/calc.mocha.js", "add nested deep"}: Pass, {"js/calc.mocha.js", "add later"}: Skip},
			nil, map[ID]string{{"js/calc.mocha.js", "add adds"}: "0 !== 4"}, ""},
		{"mocha json printed", "testdata/mocha/json-stdout.txt", func(s string) *Report { return ParseMochaJSON([]byte(s)) },
			map[ID]Status{{"js/calc.mocha.js", "add adds"}: Fail, {"js/calc.mocha.js", "add zero"}: Pass, {"js/calc.mocha.js", "add nested deep"}: Pass, {"js/calc.mocha.js", "add later"}: Skip},
			nil, nil, ""},
		{"mocha spec", "testdata/mocha/spec.txt", ParseMochaSpec,
			map[ID]Status{{"", "add adds"}: Fail, {"", "add zero"}: Pass, {"", "add later"}: Skip, {"", "add nested deep"}: Pass},
			nil, map[ID]string{{"", "add adds"}: "0 !== 4"}, ""},
		{"node --test TAP", "testdata/tap/node-test.txt", ParseTAP,
			map[ID]Status{{"", "add"}: Fail, {"", "add/adds"}: Fail, {"", "add/zero"}: Pass, {"", "add/later"}: Skip, {"", "top level"}: Pass},
			nil, map[ID]string{{"", "add/adds"}: "0 !== 4"}, ""},
		{"go test", "testdata/gotext/plain.txt", ParseGoText,
			map[ID]Status{{"example.com/calc/calc", "TestAdd"}: Fail, {"example.com/calc/calc", "TestTable"}: Fail, {"example.com/calc/calc", "TestTable/two"}: Fail},
			[]string{"example.com/calc/broken"}, map[ID]string{{"example.com/calc/calc", "TestAdd"}: "Add(2, 2) = 0, want 4", {"example.com/calc/calc", "TestTable/two"}: "two is wrong"},
			"undefined: undefinedThing"},
		{"go test -v", "testdata/gotext/v.txt", ParseGoText,
			map[ID]Status{{"example.com/calc/calc", "TestAdd"}: Fail, {"example.com/calc/calc", "TestSub"}: Pass, {"example.com/calc/calc", "TestTable"}: Fail,
				{"example.com/calc/calc", "TestTable/one"}: Pass, {"example.com/calc/calc", "TestTable/two"}: Fail, {"example.com/calc/calc", "TestSkip"}: Skip},
			[]string{"example.com/calc/broken"}, map[ID]string{{"example.com/calc/calc", "TestAdd"}: "Add(2, 2) = 0, want 4"}, "undefined: undefinedThing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := readTestdata(t, tt.file)
			rep := tt.parse(out)
			checkTests(t, rep, tt.want)
			checkWellFormed(t, rep)
			for _, b := range tt.broken {
				if !rep.IsBroken(b) {
					t.Errorf("suite %s not broken (broken: %v)", b, rep.Broken)
				}
			}
			for id, line := range tt.output {
				if !containsLine(rep.Output[id], line) {
					t.Errorf("output of %s lacks %q: %q", id, line, rep.Output[id])
				}
			}
			if tt.errors != "" && !containsLine(rep.Errors, tt.errors) {
				t.Errorf("errors lack %q: %q", tt.errors, rep.Errors)
			}
			// Parse finds the same tests in printed output.
			if !strings.HasSuffix(tt.file, ".json") {
				if got := Parse(out); got == nil || got.Len() != rep.Len() {
					t.Errorf("Parse found %d tests, the parser %d", got.Len(), rep.Len())
				}
			}
		})
	}
}

// A test keeps its ID between a passing and a failing run: base and change
// are compared by it.
func TestIDsStableAcrossOutcomes(t *testing.T) {
	t.Parallel()
	pairs := []struct {
		name       string
		parse      func(string) *Report
		fail, pass string
		id         ID
	}{
		{"pytest", ParsePytest, "FAILED tests/test_a.py::TestX::test_y[1] - assert 1 == 2\n", "PASSED tests/test_a.py::TestX::test_y[1]\n", ID{"tests/test_a.py", "TestX::test_y[1]"}},
		{"unittest", ParseUnittest, "test_y (pkg.mod.TestX.test_y) ... FAIL\n", "test_y (pkg.mod.TestX) ... ok\n", ID{"pkg.mod.TestX", "test_y"}},
		{"tap", ParseTAP, "TAP version 13\n# Subtest: a\n    not ok 1 - b\n    1..1\nnot ok 1 - a\n1..1\n", "TAP version 13\n# Subtest: a\n    ok 1 - b\n    1..1\nok 1 - a\n1..1\n", ID{"", "a/b"}},
		{"go", ParseGoText, "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\tex.com/p\t0.01s\n", "=== RUN   TestX\n--- PASS: TestX (0.00s)\nok  \tex.com/p\t0.01s\n", ID{"ex.com/p", "TestX"}},
		{"mocha spec", ParseMochaSpec, "  calc\n    1) adds\n\n  0 passing\n  1 failing\n", "  calc\n    ✔ adds\n\n  1 passing (2ms)\n", ID{"", "calc adds"}},
	}
	for _, p := range pairs {
		f, ok := p.parse(p.fail), p.parse(p.pass)
		if f == nil || ok == nil || f.Tests[p.id] != Fail || ok.Tests[p.id] != Pass {
			t.Errorf("%s: fail run %v, pass run %v; want %s fail then pass", p.name, f, ok, p.id)
		}
	}
}

func TestNothingNamedIsNil(t *testing.T) {
	t.Parallel()
	for _, out := range []string{"", "hello\nworld\n", "make: *** [Makefile:3: test] Error 1\n", "ok\n", "{\"a\": 1}\n",
		"Error: no test specified\n", "npm ERR! code ELIFECYCLE\n"} {
		if r := Parse(out); r != nil {
			t.Errorf("Parse(%q) = %+v, want nil", out, r)
		}
	}
}

func TestParseFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file   string
		format Format
	}{
		{"testdata/pytest/junit.xml", FormatJUnit},
		{"testdata/jest/report.json", FormatJest},
		{"testdata/mocha/report.json", FormatMocha},
		{"testdata/gotext/v.txt", FormatGoText},
	} {
		r, err := ParseFile(tc.file, []byte(readTestdata(t, tc.file)))
		if err != nil || r == nil || r.Format != tc.format || r.Len() == 0 {
			t.Errorf("%s: %v, %v", tc.file, r, err)
		}
	}
	if _, err := ParseFile("x.txt", []byte("nothing")); err == nil {
		t.Error("a file naming no tests: want an error")
	}
}

// A `make test` that runs go test and then pytest yields both.
func TestParseMergesRunners(t *testing.T) {
	t.Parallel()
	out := readTestdata(t, "testdata/gotext/plain.txt") + "\n" + readTestdata(t, "testdata/pytest/rA.txt")
	r := Parse(out)
	if r == nil || r.Tests[ID{"example.com/calc/calc", "TestAdd"}] != Fail || r.Tests[ID{"test_calc.py", "test_sub"}] != Pass {
		t.Fatalf("merged report: %+v", r)
	}
}

func fuzzSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		f.Add(readTestdata(f, name))
	}
}

func FuzzParsePytest(f *testing.F) {
	fuzzSeeds(f, "testdata/pytest/rA.txt", "testdata/pytest/v.txt", "testdata/pytest/broken-rA.txt")
	f.Fuzz(func(t *testing.T, s string) { checkWellFormed(t, ParsePytest(s)) })
}

func FuzzParseUnittest(f *testing.F) {
	fuzzSeeds(f, "testdata/unittest/v.txt", "testdata/unittest/broken-v.txt")
	f.Fuzz(func(t *testing.T, s string) { checkWellFormed(t, ParseUnittest(s)) })
}

func FuzzParseTAP(f *testing.F) {
	fuzzSeeds(f, "testdata/tap/node-test.txt")
	f.Fuzz(func(t *testing.T, s string) { checkWellFormed(t, ParseTAP(s)) })
}

func FuzzParseGoText(f *testing.F) {
	fuzzSeeds(f, "testdata/gotext/plain.txt", "testdata/gotext/v.txt")
	f.Fuzz(func(t *testing.T, s string) { checkWellFormed(t, ParseGoText(s)) })
}

func FuzzParseMochaSpec(f *testing.F) {
	fuzzSeeds(f, "testdata/mocha/spec.txt")
	f.Add("  suite\n    ✔ a (2ms)\n    1) b\n\n  1 passing\n  1 failing\n\n  1) suite\n       b:\n     Error: x\n")
	f.Fuzz(func(t *testing.T, s string) { checkWellFormed(t, ParseMochaSpec(s)) })
}

func FuzzParseJSReports(f *testing.F) {
	fuzzSeeds(f, "testdata/jest/report.json", "testdata/jest/broken.json", "testdata/mocha/report.json", "testdata/mocha/json-stdout.txt")
	f.Fuzz(func(t *testing.T, s string) {
		checkWellFormed(t, ParseJestJSON([]byte(s)))
		checkWellFormed(t, ParseMochaJSON([]byte(s)))
	})
}

func TestCovers(t *testing.T) {
	t.Parallel()
	junit, err := ParseJUnit([]byte(readTestdata(t, "testdata/pytest/junit.xml")))
	if err != nil {
		t.Fatal(err)
	}
	brokenJUnit, _ := ParseJUnit([]byte(readTestdata(t, "testdata/pytest/broken-junit.xml")))
	jest := ParseJestJSON([]byte(readTestdata(t, "testdata/jest/report.json")))
	for _, tc := range []struct {
		name    string
		file    *Report
		printed *Report
		want    bool
	}{
		{"pytest summary beside its JUnit XML", junit, ParsePytest(readTestdata(t, "testdata/pytest/rA.txt")), true},
		{"pytest collection error beside its JUnit XML", brokenJUnit, ParsePytest(readTestdata(t, "testdata/pytest/broken-rA.txt")), true},
		{"go test beside pytest's JUnit XML", junit, ParseGoText(readTestdata(t, "testdata/gotext/v.txt")), false},
		{"jest's printed JSON beside its file", jest, ParseJestJSON([]byte(readTestdata(t, "testdata/jest/report.json"))), true},
		{"TAP beside jest's file", jest, ParseTAP(readTestdata(t, "testdata/tap/node-test.txt")), false},
	} {
		if got := tc.file.Covers(tc.printed); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}
