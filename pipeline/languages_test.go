package pipeline_test

import (
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/report"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// Python and JavaScript repositories go through the real pipeline in the
// real sandbox with no .selfcode.yml verify list: setup and verify are
// inferred, the tests are compared one by one, and the verdict follows.

const calcPlan = `{"summary":"Fix add","steps":[{"id":"1","title":"Fix add","files":[{"path":"calc","action":"modify","purpose":"add adds"}],"acceptance":["tests pass"]}],"risks":[],"questions":[]}`

var pythonRepo = map[string]string{
	"pyproject.toml":     "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npy-modules = [\"calc\"]\n",
	"calc.py":            "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
	"tests/test_calc.py": "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
}

var jestRepo = map[string]string{
	"package.json": `{"name":"calc","version":"1.0.0","private":true,"scripts":{"test":"jest"}}` + "\n",
	"calc.js":      "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;\n",
	"calc.test.js": "const { add, sub } = require(\"./calc\");\ntest(\"add\", () => { expect(add(2, 2)).toBe(4); });\ntest(\"sub\", () => { expect(sub(5, 3)).toBe(2); });\n",
}

var nodeTestRepo = map[string]string{
	"package.json":      `{"name":"calc","version":"1.0.0","private":true,"scripts":{"test":"node --test"}}` + "\n",
	"calc.js":           "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;\n",
	"test/calc.test.js": "const assert = require(\"node:assert\");\nconst test = require(\"node:test\");\nconst { add, sub } = require(\"../calc\");\ntest(\"add\", () => assert.strictEqual(add(2, 2), 4));\ntest(\"sub\", () => assert.strictEqual(sub(5, 3), 2));\n",
}

var unittestRepo = map[string]string{
	"setup.cfg":          "[metadata]\nname = calc\n",
	"calc.py":            "def add(a, b):\n    return a - b\n",
	"tests/test_calc.py": "import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n",
}

var mochaRepo = map[string]string{
	"package.json":      `{"name":"calc","version":"1.0.0","private":true,"scripts":{"test":"mocha"}}` + "\n",
	"calc.js":           "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;\n",
	"test/calc.test.js": "const assert = require(\"node:assert\");\nconst { add, sub } = require(\"../calc\");\ndescribe(\"calc\", () => {\n  it(\"adds\", () => assert.strictEqual(add(2, 2), 4));\n  it(\"subtracts\", () => assert.strictEqual(sub(5, 3), 2));\n});\n",
}

var tsRepo = map[string]string{
	"package.json":      `{"name":"calc","version":"1.0.0","private":true,"scripts":{"test":"node --test"}}` + "\n",
	"tsconfig.json":     `{"compilerOptions":{"strict":true,"noEmit":true,"target":"es2020","module":"commonjs"},"include":["src"]}` + "\n",
	"src/calc.ts":       "export function add(a: number, b: number): number {\n  return a - b;\n}\n",
	"test/calc.test.js": "const assert = require(\"node:assert\");\nconst test = require(\"node:test\");\ntest(\"truth\", () => assert.ok(true));\ntest(\"math\", () => assert.strictEqual(1 + 1, 2));\n",
}

// pytestWithOldFailure has a failing test the change has nothing to do with.
var pytestWithOldFailure = map[string]string{
	"requirements.txt":   "# nothing to install\n",
	"calc.py":            "def add(a, b):\n    return a - b\n",
	"tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_network():\n    assert False, \"needs a network\"\n",
}

// pytestUnimportable has a test file that does not import on the base
// (a module the sandbox lacks): the other files' tests still run.
var pytestUnimportable = map[string]string{
	"pyproject.toml":         pythonRepo["pyproject.toml"],
	"calc.py":                pythonRepo["calc.py"],
	"tests/test_calc.py":     pythonRepo["tests/test_calc.py"],
	"tests/test_optional.py": "import a_module_the_sandbox_lacks\n\n\ndef test_optional():\n    assert a_module_the_sandbox_lacks\n",
}

// missingRunner names a test runner the sandbox does not have.
var missingRunner = map[string]string{
	"package.json": `{"name":"calc","version":"1.0.0","private":true,"scripts":{"test":"ava"}}` + "\n",
	"calc.js":      "exports.add = (a, b) => a - b;\n",
}

// goRepo has a bug in Add, a test for it, and an unrelated failing test.
var goRepo = map[string]string{
	"go.mod":  "module example.com/calc\n\ngo 1.22\n",
	"calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Error(\"Add(2, 2) != 4\")\n\t}\n}\n\n" +
		"func TestSub(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n\t\tt.Error(\"Sub(5, 3) != 2\")\n\t}\n}\n\nfunc TestNetwork(t *testing.T) { t.Fatal(\"needs a network\") }\n",
}

// noTests is a Python project with nothing to test.
var noTests = map[string]string{
	"requirements.txt": "# nothing\n",
	"calc.py":          "def add(a, b):\n    return a - b\n",
}

func TestLanguagesVerifiedTestByTest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		files       map[string]string
		file        string
		old, new    string
		verdict     verify.Verdict
		fixed       string // a test that fails on the base and passes on the change
		regression  string // a test that passes on the base and fails on the change
		syntaxProbe string // an edit that breaks the file's syntax, refused first
		preExisting string // a test failing on both
		reason      string // why the change is unverified
		tests       int    // tests the test command names (default 2)
	}{
		{"pytest fixed", pythonRepo, "calc.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b",
			verify.Verified, "test_add", "", "def add(a, b):\n    return (a +", "", "", 0},
		{"pytest regression", pythonRepo, "calc.py", "    return a - b\n\n\ndef sub(a, b):\n    return a - b", "    return a + b\n\n\ndef sub(a, b):\n    return a + b",
			verify.Failed, "", "test_sub", "", "", "", 0},
		{"jest fixed", jestRepo, "calc.js", "exports.add = (a, b) => a - b;", "exports.add = (a, b) => a + b;",
			verify.Verified, "add", "", "exports.add = (a, b) => { a + b;", "", "", 0},
		{"node --test regression", nodeTestRepo, "calc.js", "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;", "exports.add = (a, b) => a + b;\nexports.sub = (a, b) => a + b;",
			verify.Failed, "", "sub", "", "", "", 0},
		{"unittest fixed", unittestRepo, "calc.py", "return a - b", "return a + b",
			verify.Verified, "test_add", "", "", "", "", 0},
		{"mocha regression", mochaRepo, "calc.js", "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;", "exports.add = (a, b) => a + b;\nexports.sub = (a, b) => a + b;",
			verify.Failed, "calc adds", "calc subtracts", "", "", "", 0},
		{"TypeScript type error", tsRepo, "src/calc.ts", "return a - b;", "return `${a + b}`;",
			verify.Failed, "", "typecheck", "", "", "", 0},
		{"pytest: a test file that does not import", pytestUnimportable, "calc.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b",
			verify.Verified, "test_add", "", "", "test_optional", "", 0},
		{"pre-existing unrelated failure", pytestWithOldFailure, "calc.py", "return a - b", "return a + b",
			verify.Verified, "test_add", "", "", "test_network", "", 0},
		{"runner missing", missingRunner, "calc.js", "a - b", "a + b",
			verify.Unverified, "", "", "", "", "could not be started", -1},
		{"go: fix beside an old failure", goRepo, "calc.go", "return a - b }\n\n// Sub", "return a + b }\n\n// Sub",
			verify.Verified, "TestAdd", "", "", "TestNetwork", "", 3},
		{"go: hidden regression", goRepo, "calc.go", "func Add(a, b int) int { return a - b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }",
			"func Add(a, b int) int { return a + b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a + b }",
			verify.Failed, "TestAdd", "TestSub", "", "TestNetwork", "", 3},
		{"unittest regression", unittestRepo, "calc.py", "return a - b", "return 4 if a else 1",
			verify.Failed, "test_add", "test_zero", "", "", "", 0},
		{"jest regression", jestRepo, "calc.js", "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;", "exports.add = (a, b) => a + b;\nexports.sub = (a, b) => a + b;",
			verify.Failed, "add", "sub", "", "", "", 0},
		{"node --test fixed", nodeTestRepo, "calc.js", "exports.add = (a, b) => a - b;", "exports.add = (a, b) => a + b;",
			verify.Verified, "add", "", "exports.add = (a, b) => a +;", "", "", 0},
		{"mocha fixed", mochaRepo, "calc.js", "exports.add = (a, b) => a - b;", "exports.add = (a, b) => a + b;",
			verify.Verified, "calc adds", "", "", "", "", 0},
		{"TypeScript fixed", tsRepo, "src/calc.ts", "return a - b;", "return a + b;",
			verify.Verified, "", "", "return a +;", "", "", 0},
		{"python: no test ran", noTests, "calc.py", "return a - b", "return a + b",
			verify.Unverified, "", "", "", "", "names no tests", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			script := []fakeopenai.Step{planner(calcPlan)}
			if tt.syntaxProbe != "" {
				script = append(script, editor(call("str_replace", map[string]any{"path": tt.file, "old_str": tt.old, "new_str": tt.syntaxProbe})))
			}
			script = append(script,
				editor(call("str_replace", map[string]any{"path": tt.file, "old_str": tt.old, "new_str": tt.new})),
				editor(call("finish", map[string]any{"summary": "changed " + tt.file})))
			cfg := "limits: {max_fix_attempts: 0}\n"
			if tt.regression != "" {
				// One fix round, which gives up: the fixer must have been told
				// the newly failing test.
				cfg = "limits: {max_fix_attempts: 1}\n"
				script = append(script, fixer(call("finish", map[string]any{"summary": "cannot fix"})))
			}
			h := newHarness(t, tt.files, cfg, script...)
			out, err := h.run()
			if err != nil {
				t.Fatal(err)
			}
			cmp := out.Comparison
			if cmp == nil || out.Verdict != tt.verdict {
				t.Fatalf("verdict %q, want %q; reasons %+v; comparison %+v", out.Verdict, tt.verdict, cmp, cmp)
			}
			if tt.fixed != "" && !anyContains(cmp.Fixed, tt.fixed) {
				t.Errorf("fixed %q lacks %q", cmp.Fixed, tt.fixed)
			}
			if tt.regression != "" && !anyContains(cmp.Regressions, tt.regression) {
				t.Errorf("regressions %q lack %q", cmp.Regressions, tt.regression)
			}
			if tt.regression != "" {
				reqs := h.fake.RequestsFor("fixer")
				if len(reqs) == 0 || !strings.Contains(string(reqs[0].Raw), tt.regression) {
					t.Errorf("the fixer was not told the newly failing test %q (%d requests)", tt.regression, len(reqs))
				}
			}
			if tt.preExisting != "" && !anyContains(cmp.PreExisting, tt.preExisting) {
				t.Errorf("pre-existing %q lack %q", cmp.PreExisting, tt.preExisting)
			}
			if tt.reason != "" {
				found := false
				for _, r := range cmp.Reasons {
					found = found || strings.Contains(r.Why, tt.reason)
				}
				if !found {
					t.Errorf("reasons %+v lack %q", cmp.Reasons, tt.reason)
				}
			}
			if tt.syntaxProbe != "" {
				results := h.toolResults()
				if len(results) == 0 || !strings.Contains(results[0], "syntax") {
					t.Errorf("the syntax-breaking edit was not refused: %q", results)
				}
			}
			// The test command was read test by test, after an offline setup.
			last := out.Verify[len(out.Verify)-1].Run
			for _, st := range last.Setup {
				if !st.Passed {
					t.Errorf("setup %q failed:\n%s", st.Run, st.Output)
				}
			}
			want := tt.tests
			if want == 0 {
				want = 2
			}
			tested := want < 0
			for _, c := range last.Commands {
				if c.Kind == verify.TestCommand && want > 0 {
					tested = true
					if c.Tests == nil || c.Tests.Len() != want {
						t.Errorf("%s: tests %+v, want the 2 tests by name\n%s", c.Run, c.Tests, c.Output)
					}
				}
			}
			if !tested {
				t.Errorf("no test command ran: %+v", last.Commands)
			}
			// The report shows tests, not just exit codes.
			var rep templates.Report
			report.Fill(&rep, out, h.cfg)
			if rep.Verdict != string(tt.verdict) {
				t.Errorf("report verdict %q", rep.Verdict)
			}
		})
	}
}

func anyContains(list []string, s string) bool {
	for _, l := range list {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
