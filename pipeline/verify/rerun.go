package verify

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/selfcode/selfcode/pipeline/testreport"
)

// Reruns is how many more times a test that newly fails is run alone
// before it counts as a regression.
const Reruns = 2

// RerunRegressions runs every test that passed on the base (or did not
// exist there) and fails on the change again alone, up to Reruns times;
// a test that then passes is recorded in its command's Flaky list, so
// Compare reports it as flaky instead of as a regression. Tests whose runner
// cannot run one test alone are left as they are. It returns how many tests
// turned out flaky; an error means the sandbox could not run a command.
func RerunRegressions(ctx context.Context, r Runner, cmds []Command, head *Run, cmp Comparison) (int, error) {
	flaky := 0
	for _, cc := range cmp.Commands {
		i, ci := commandIndex(head, cmds, cc.Name)
		if i < 0 || ci < 0 {
			continue
		}
		for _, f := range cc.Regressions {
			if f.Kind != KindTest {
				continue
			}
			rc, ok := RerunCommand(cmds[ci], head.Commands[i], f.Test)
			if !ok {
				continue
			}
			passed, err := rerun(ctx, r, rc, f.Test)
			if err != nil {
				return flaky, err
			}
			if passed {
				head.Commands[i].Flaky = append(head.Commands[i].Flaky, f.Test)
				flaky++
			}
		}
	}
	return flaky, nil
}

// rerun runs rc up to Reruns times and reports whether id passed in one.
func rerun(ctx context.Context, r Runner, rc Command, id testreport.ID) (bool, error) {
	for range Reruns {
		res, err := RunOne(ctx, r, rc)
		if err != nil {
			return false, err
		}
		if res.Tests != nil && statusOf(res.Tests, id) == testreport.Pass {
			return true, nil
		}
	}
	return false, nil
}

// statusOf finds id in rep; a rerun may name the suite differently (a
// relative path), so a unique test of the same name counts too.
func statusOf(rep *testreport.Report, id testreport.ID) testreport.Status {
	if st, ok := rep.Tests[id]; ok {
		return st
	}
	var found testreport.Status
	n := 0
	for got, st := range rep.Tests {
		if got.Name == id.Name && (strings.HasSuffix(got.Suite, id.Suite) || strings.HasSuffix(id.Suite, got.Suite)) {
			found, n = st, n+1
		}
	}
	if n == 1 {
		return found
	}
	return ""
}

func commandIndex(head *Run, cmds []Command, name string) (int, int) {
	hi, ci := -1, -1
	for i := range head.Commands {
		if head.Commands[i].Name == name {
			hi = i
			break
		}
	}
	for i := range cmds {
		if cmds[i].Name == name {
			ci = i
			break
		}
	}
	return hi, ci
}

// rerunReport is where a rerun writes its report file, when its runner
// writes one.
const rerunReport = "/tmp/selfcode-reports/rerun"

// RerunCommand is the command that runs test id of c alone, chosen by the
// test runner c names or, for a command of the user's, the runner whose
// output its results were read from. The rerun reports in the same form as
// the command did, so the test keeps its ID. Runners that cannot select
// one test by its ID (TAP has no file) are not rerun.
func RerunCommand(c Command, res CommandResult, id testreport.ID) (Command, bool) {
	runner := c.Runner
	format := testreport.Format("")
	if res.Tests != nil {
		format = res.Tests.Format
	}
	if runner == "" {
		switch format {
		case testreport.FormatGoJSON, testreport.FormatGoText:
			runner = "go"
		case testreport.FormatPytest:
			runner = "pytest"
		case testreport.FormatUnittest:
			runner = "unittest"
		case testreport.FormatJest, testreport.FormatVitest:
			runner = "jest"
		case testreport.FormatMocha:
			runner = "mocha"
		}
	}
	if id.Suite == "" || strings.HasPrefix(id.Suite, "-") || strings.ContainsAny(id.Suite, "\n\x00") {
		return Command{}, false
	}
	const python = `if [ -x /work/.venv/bin/python ]; then p=/work/.venv/bin/python; else p=python3; fi; `
	const nodeBin = `PATH="$PWD/node_modules/.bin:$PATH" `
	var run string
	var reports []string
	switch runner {
	case "go":
		run = fmt.Sprintf("go test -json -count=1 -run %s %s", ShellQuote(goRunPattern(id.Name)), ShellQuote(id.Suite))
	case "pytest":
		if format == testreport.FormatJUnit {
			// The ID is a JUnit classname ("pkg.test_mod.TestClass") and
			// name: try each split of the classname into a file and classes,
			// and report in JUnit again.
			var cands []string
			for _, c := range pytestNodeIDs(id) {
				cands = append(cands, ShellQuote(c))
			}
			reports = []string{rerunReport + ".xml"}
			run = python + `for c in ` + strings.Join(cands, " ") + `; do if [ -f "${c%%::*}" ]; then exec "$p" -m pytest -rA -p no:cacheprovider --junitxml=` + reports[0] + ` "$c"; fi; done; exit 4`
		} else {
			run = python + `"$p" -m pytest -rA -p no:cacheprovider ` + ShellQuote(id.Suite+"::"+id.Name)
		}
	case "unittest":
		run = python + `"$p" -m unittest -v ` + ShellQuote(id.Suite+"."+id.Name)
	case "jest":
		reports = []string{rerunReport + ".json"}
		run = nodeBin + `jest --ci --json --outputFile=` + reports[0] + ` ` + ShellQuote(id.Suite) + ` -t ` + ShellQuote("^"+regexp.QuoteMeta(strings.ReplaceAll(id.Name, " › ", " "))+"$")
	case "mocha":
		reports = []string{rerunReport + ".json"}
		run = nodeBin + `mocha --reporter json --reporter-option output=` + reports[0] + ` ` + ShellQuote(id.Suite) + ` --grep ` + ShellQuote("^"+regexp.QuoteMeta(id.Name)+"$")
	default:
		return Command{}, false
	}
	if len(reports) > 0 {
		run = "mkdir -p /tmp/selfcode-reports && rm -f " + reports[0] + " && " + run
	}
	return Command{Name: c.Name + " (rerun)", Run: run, Timeout: c.Timeout, Kind: TestCommand, Runner: runner,
		OutputBytes: c.OutputBytes, Reports: reports}, true
}

// pytestNodeIDs turns a JUnit classname and name into the pytest node ids
// they may stand for: "a.test_m.TestC" + "t" → a/test_m/TestC.py::t,
// a/test_m.py::TestC::t, a.py::test_m::TestC::t.
func pytestNodeIDs(id testreport.ID) []string {
	parts := strings.Split(id.Suite, ".")
	var out []string
	for i := len(parts); i >= 1; i-- {
		file := strings.Join(parts[:i], "/") + ".py"
		out = append(out, strings.Join(append(append([]string{file}, parts[i:]...), id.Name), "::"))
	}
	return out
}

// goRunPattern anchors each level of a Go test name for -run.
func goRunPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// ShellQuote quotes s for sh as one word: untrusted text (a test name, a
// path) reaches a sandbox shell only through it.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
