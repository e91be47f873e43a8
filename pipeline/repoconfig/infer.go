package repoconfig

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Kind says what a verify command proves.
type Kind string

// Kinds of verify commands.
const (
	KindBuild Kind = "build" // compiles, type-checks or imports the code
	KindTest  Kind = "test"  // runs tests
	KindOther Kind = "other" // anything else (lint, format check)
)

// Runner names a test runner whose output selfcode reads test by test.
type Runner string

// Runners.
const (
	RunnerGo       Runner = "go"
	RunnerPytest   Runner = "pytest"
	RunnerUnittest Runner = "unittest"
	RunnerJest     Runner = "jest"
	RunnerVitest   Runner = "vitest"
	RunnerMocha    Runner = "mocha"
	RunnerNodeTest Runner = "node-test"
)

// ReportDir is where inferred commands write their report files in the
// sandbox: outside the checkout, so they never show up as changes.
const ReportDir = "/tmp/selfcode-reports"

// Venv is the virtual environment inferred Python setup creates.
const Venv = "/work/.venv"

// The runner words GuessKind and the package.json inference recognise.
var (
	testWordRE  = regexp.MustCompile(`(^|[\s/;&|(])(go test|pytest|py\.test|unittest|nosetests|tox|jest|vitest|mocha|ava|tap|node --test|npm (run )?test|npm t|yarn( run)? test|pnpm( run)? test|make (check|test)|cargo test|ctest)(\s|$|;|&|\))`)
	buildWordRE = regexp.MustCompile(`(^|[\s/;&|(])(go (build|vet)|tsc|npm run build|yarn( run)? build|pnpm( run)? build|make( build| all)?|compileall|py_compile|cargo (build|check)|mypy|pyright)(\s|$|;|&|\))`)
)

// runnerWords find the test runner a command line names.
var runnerWords = []struct {
	re *regexp.Regexp
	r  Runner
}{
	{regexp.MustCompile(`\bgo test\b`), RunnerGo},
	{regexp.MustCompile(`\b(pytest|py\.test)\b`), RunnerPytest},
	{regexp.MustCompile(`\bunittest\b`), RunnerUnittest},
	{regexp.MustCompile(`\bjest\b`), RunnerJest},
	{regexp.MustCompile(`\bvitest\b`), RunnerVitest},
	{regexp.MustCompile(`\bmocha\b`), RunnerMocha},
	{regexp.MustCompile(`\bnode --test\b`), RunnerNodeTest},
}

// GuessKind tells a configured command's kind from its command line.
func GuessKind(run string) Kind {
	switch {
	case testWordRE.MatchString(run):
		return KindTest
	case buildWordRE.MatchString(run):
		return KindBuild
	}
	return KindOther
}

// GuessRunner tells which test runner a configured command line runs,
// when it names exactly one it knows.
func GuessRunner(run string) Runner {
	if GuessKind(run) != KindTest {
		return ""
	}
	var found []Runner
	for _, r := range runnerWords {
		if r.re.MatchString(run) {
			found = append(found, r.r)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return ""
}

// Inference is what Infer found in a tree: setup steps and verify
// commands, in order, for every kind of project it holds.
type Inference struct {
	Setup  []SetupStep
	Verify []Command
}

// Infer guesses setup steps and verify commands from the tree at dir,
// without running anything from it:
//
//   - go.mod: `go mod download` (network) when it requires modules; go
//     build, go vet, go test.
//   - package.json: install with the lockfile's tool (npm ci, yarn, pnpm)
//     or npm install, only when it declares dependencies (network); the
//     build script; tsc --noEmit when tsconfig.json exists; the test script
//     (unless it is npm's placeholder) with its runner's machine-readable
//     reporter when the runner is the script's last command.
//   - pyproject.toml, setup.py, setup.cfg, requirements*.txt, pytest.ini,
//     tox.ini: a virtual environment at Venv that sees the image's packages
//     (pytest among them), the requirements and the project installed
//     into it (network only when something is declared), then pytest with
//     a JUnit report, going on past a test file that does not import (the
//     other files still run, test by test), or unittest when nothing
//     mentions pytest and the tests use unittest.
//   - a Makefile test target: make test, only when nothing above gave a
//     test command.
//
// Several may apply at once; their steps and commands are concatenated.
func Infer(dir string) Inference {
	var inf Inference
	inferGo(dir, &inf)
	inferNode(dir, &inf)
	inferPython(dir, &inf)
	if !slices.ContainsFunc(inf.Verify, func(c Command) bool { return c.Kind == KindTest }) {
		for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
			if hasMakeTarget(filepath.Join(dir, name), "test") {
				inf.Verify = append(inf.Verify, Command{Name: "test", Run: "make test", Kind: KindTest, Inferred: true})
				break
			}
		}
	}
	// Names are unique: a second "test" becomes "test (python)" and so on.
	seen := map[string]int{}
	for i := range inf.Verify {
		seen[inf.Verify[i].Name]++
	}
	for i, c := range inf.Verify {
		if seen[c.Name] > 1 && c.Runner != "" {
			inf.Verify[i].Name = c.Name + " (" + string(c.Runner) + ")"
		}
	}
	return inf
}

func inferGo(dir string, inf *Inference) {
	mod := filepath.Join(dir, "go.mod")
	if !regular(mod) {
		return
	}
	if goModRequires(mod) {
		inf.Setup = append(inf.Setup, SetupStep{Name: "go mod download", Run: "go mod download", Network: true, Inferred: true})
	}
	inf.Verify = append(inf.Verify,
		Command{Name: "build", Run: "go build ./...", Kind: KindBuild, Inferred: true},
		Command{Name: "vet", Run: "go vet ./...", Kind: KindBuild, Inferred: true},
		Command{Name: "test", Run: "go test ./...", Kind: KindTest, Runner: RunnerGo, Inferred: true},
	)
}

// goModRequires reports whether go.mod has a require directive.
func goModRequires(path string) bool {
	data := readSmall(path)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "require" {
			return true
		}
	}
	return false
}

// packageJSON is the part of package.json inference reads.
type packageJSON struct {
	Scripts              map[string]string `json:"scripts"`
	Dependencies         map[string]any    `json:"dependencies"`
	DevDependencies      map[string]any    `json:"devDependencies"`
	OptionalDependencies map[string]any    `json:"optionalDependencies"`
	PeerDependencies     map[string]any    `json:"peerDependencies"`
	Workspaces           any               `json:"workspaces"`
}

// npmPlaceholder is the test script `npm init` writes.
const npmPlaceholder = `echo "Error: no test specified" && exit 1`

func inferNode(dir string, inf *Inference) {
	data := readSmall(filepath.Join(dir, "package.json"))
	if data == nil {
		return
	}
	var pkg packageJSON
	if json.Unmarshal(data, &pkg) != nil {
		// Unreadable: npm will say why when the test script runs.
		inf.Verify = append(inf.Verify, Command{Name: "test", Run: "npm test", Kind: KindTest, Inferred: true})
		return
	}
	tool := "npm"
	switch {
	case regular(filepath.Join(dir, "pnpm-lock.yaml")):
		tool = "pnpm"
	case regular(filepath.Join(dir, "yarn.lock")):
		tool = "yarn"
	}
	declares := len(pkg.Dependencies)+len(pkg.DevDependencies)+len(pkg.OptionalDependencies)+len(pkg.PeerDependencies) > 0 || pkg.Workspaces != nil
	if declares {
		var run string
		switch {
		case tool == "pnpm":
			run = "pnpm install --frozen-lockfile"
		case tool == "yarn":
			run = "yarn install --frozen-lockfile --non-interactive"
		case regular(filepath.Join(dir, "package-lock.json")) || regular(filepath.Join(dir, "npm-shrinkwrap.json")):
			run = "npm ci --no-audit --no-fund"
		default:
			run = "npm install --no-audit --no-fund --no-package-lock"
		}
		inf.Setup = append(inf.Setup, SetupStep{Name: "install (" + tool + ")", Run: run, Network: true, Inferred: true})
	}
	runScript := func(name string) string {
		if tool == "npm" {
			if name == "test" {
				return "npm test"
			}
			return "npm run " + name
		}
		return tool + " run " + name
	}
	if strings.TrimSpace(pkg.Scripts["build"]) != "" {
		inf.Verify = append(inf.Verify, Command{Name: "build", Run: runScript("build"), Kind: KindBuild, Inferred: true})
	}
	if regular(filepath.Join(dir, "tsconfig.json")) {
		// The project's own TypeScript when it installed one, else the image's.
		inf.Verify = append(inf.Verify, Command{Name: "typecheck", Run: `PATH="$PWD/node_modules/.bin:$PATH" tsc --noEmit -p .`, Kind: KindBuild, Inferred: true})
	}
	script := strings.TrimSpace(pkg.Scripts["test"])
	if script == "" || script == npmPlaceholder {
		return
	}
	cmd := Command{Name: "test", Run: runScript("test"), Kind: KindTest, Inferred: true}
	runner, args, report := nodeReporter(lastCommand(script))
	cmd.Runner = runner
	if args != "" {
		cmd.Run = "mkdir -p " + ReportDir + " && " + runScript("test") + " -- " + args
		if tool == "yarn" {
			cmd.Run = "mkdir -p " + ReportDir + " && " + runScript("test") + " " + args
		}
	}
	if report != "" {
		cmd.Reports = []string{report}
	}
	inf.Verify = append(inf.Verify, cmd)
}

// lastCommand is the last simple command of a script: what arguments
// appended to it reach.
func lastCommand(script string) string {
	for _, sep := range []string{"&&", "||", ";", "|"} {
		if i := strings.LastIndex(script, sep); i >= 0 {
			script = script[i+len(sep):]
		}
	}
	return strings.TrimSpace(script)
}

// nodeReporter returns the runner of a test script's last command and the
// arguments that make it write a machine-readable report (and where).
func nodeReporter(last string) (Runner, string, string) {
	f := strings.Fields(last)
	// Skip environment assignments and wrappers: NODE_ENV=test jest, npx jest, cross-env X=1 jest.
	for len(f) > 0 && (strings.Contains(f[0], "=") || f[0] == "npx" || f[0] == "cross-env" || f[0] == "env") {
		f = f[1:]
	}
	if len(f) == 0 {
		return "", "", ""
	}
	word := path.Base(f[0])
	switch {
	case word == "jest":
		out := ReportDir + "/jest.json"
		return RunnerJest, "--json --outputFile=" + out, out
	case word == "vitest":
		out := ReportDir + "/vitest.json"
		if len(f) == 1 || strings.HasPrefix(f[1], "-") {
			return RunnerVitest, "--run --reporter=default --reporter=json --outputFile=" + out, out
		}
		return RunnerVitest, "--reporter=default --reporter=json --outputFile=" + out, out
	case word == "mocha":
		out := ReportDir + "/mocha.json"
		return RunnerMocha, "--reporter json --reporter-option output=" + out, out
	case word == "node" && slices.Contains(f, "--test"):
		// node --test prints TAP when its output is not a terminal.
		return RunnerNodeTest, "", ""
	}
	return "", "", ""
}

// pythonMarkers are the root files that make a tree a Python project.
var pythonMarkers = []string{"pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini"}

// pyproject is the part of pyproject.toml inference reads.
type pyproject struct {
	BuildSystem struct {
		Requires []string `toml:"requires"`
	} `toml:"build-system"`
	Project struct {
		Dependencies         []string            `toml:"dependencies"`
		OptionalDependencies map[string][]string `toml:"optional-dependencies"`
	} `toml:"project"`
	Tool struct {
		Pytest map[string]any `toml:"pytest"`
		Poetry map[string]any `toml:"poetry"`
	} `toml:"tool"`
}

func inferPython(dir string, inf *Inference) {
	reqs := requirementFiles(dir)
	isPython := len(reqs) > 0
	for _, m := range pythonMarkers {
		isPython = isPython || regular(filepath.Join(dir, m))
	}
	if !isPython {
		return
	}
	pip := Venv + "/bin/pip install --disable-pip-version-check --no-input"
	inf.Setup = append(inf.Setup, SetupStep{Name: "python venv", Run: "python3 -m venv --system-site-packages " + Venv, Inferred: true})
	mentionsPytest := false
	for _, r := range reqs {
		data := readSmall(filepath.Join(dir, r))
		mentionsPytest = mentionsPytest || bytes.Contains(data, []byte("pytest"))
		if hasRequirements(data) {
			inf.Setup = append(inf.Setup, SetupStep{Name: "pip install -r " + r, Run: pip + " -r " + r, Network: true, Inferred: true})
		}
	}

	var pp pyproject
	ppData := readSmall(filepath.Join(dir, "pyproject.toml"))
	ppOK := ppData != nil && toml.Unmarshal(ppData, &pp) == nil
	mentionsPytest = mentionsPytest || (ppOK && pp.Tool.Pytest != nil) || bytes.Contains(ppData, []byte("pytest"))
	installable := regular(filepath.Join(dir, "setup.py")) || (ppOK && (len(pp.BuildSystem.Requires) > 0 || pp.Tool.Poetry != nil || ppData != nil && bytes.Contains(ppData, []byte("[project]"))))
	if installable {
		step := SetupStep{Name: "pip install the project", Inferred: true}
		extras := pythonExtras(pp)
		target := "."
		if len(extras) > 0 {
			target = ".[" + strings.Join(extras, ",") + "]"
		}
		setuptoolsOnly := !ppOK || len(pp.BuildSystem.Requires) == 0 || onlySetuptools(pp.BuildSystem.Requires)
		declaresDeps := regular(filepath.Join(dir, "setup.py")) || (ppOK && (len(pp.Project.Dependencies) > 0 || len(extras) > 0 || pp.Tool.Poetry != nil))
		switch {
		case setuptoolsOnly && !declaresDeps:
			// Nothing to fetch: the image's setuptools builds it offline.
			step.Run = pip + " --no-build-isolation --no-index --no-deps -e " + shellWord(target)
		case setuptoolsOnly:
			step.Run = pip + " --no-build-isolation -e " + shellWord(target)
			step.Network = true
		default:
			// Another build backend: pip fetches what build-system.requires declares.
			step.Run = pip + " -e " + shellWord(target)
			step.Network = true
		}
		inf.Setup = append(inf.Setup, step)
	}

	for _, f := range []struct{ name, section string }{{"pytest.ini", ""}, {"conftest.py", ""}, {"tox.ini", "[pytest]"}, {"setup.cfg", "[tool:pytest]"}, {"tests/conftest.py", ""}} {
		data := readSmall(filepath.Join(dir, f.name))
		mentionsPytest = mentionsPytest || (data != nil && (f.section == "" || bytes.Contains(data, []byte(f.section))))
	}
	py := Venv + "/bin/python"
	if mentionsPytest || !usesUnittest(dir) {
		out := ReportDir + "/pytest.xml"
		inf.Verify = append(inf.Verify, Command{Name: "test", Kind: KindTest, Runner: RunnerPytest, Inferred: true,
			Run:     py + " -m pytest -rA -p no:cacheprovider --continue-on-collection-errors --junitxml=" + out,
			Reports: []string{out}})
		return
	}
	run := py + " -m unittest discover -v"
	if st, err := os.Stat(filepath.Join(dir, "tests")); err == nil && st.IsDir() && !regular(filepath.Join(dir, "tests", "__init__.py")) {
		run += " -s tests"
	}
	inf.Verify = append(inf.Verify, Command{Name: "test", Run: run, Kind: KindTest, Runner: RunnerUnittest, Inferred: true})
}

// requirementFiles lists requirements*.txt (and *-requirements.txt) at the root.
func requirementFiles(dir string) []string {
	var out []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, ".txt") && strings.Contains(n, "requirements") {
			out = append(out, n)
		}
	}
	return out
}

// hasRequirements reports whether a requirements file names anything.
func hasRequirements(data []byte) bool {
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return true
		}
	}
	return false
}

// pythonExtras are the optional dependency groups tests usually need.
func pythonExtras(pp pyproject) []string {
	var out []string
	for _, name := range []string{"test", "tests", "testing", "dev"} {
		if _, ok := pp.Project.OptionalDependencies[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

func onlySetuptools(reqs []string) bool {
	for _, r := range reqs {
		name := strings.ToLower(strings.TrimSpace(r))
		if i := strings.IndexAny(name, "<>=!~[; "); i >= 0 {
			name = name[:i]
		}
		if name != "setuptools" && name != "wheel" {
			return false
		}
	}
	return true
}

// usesUnittest reports whether a test file at the root or under tests/
// or test/ imports unittest.
func usesUnittest(dir string) bool {
	for _, d := range []string{".", "tests", "test"} {
		m, _ := filepath.Glob(filepath.Join(dir, d, "test*.py"))
		for _, f := range m {
			if bytes.Contains(readSmall(f), []byte("unittest")) {
				return true
			}
		}
	}
	return false
}

// shellWord quotes s for sh when it needs it.
func shellWord(s string) string {
	if strings.ContainsAny(s, "[]*? ") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// readSmall reads a regular file of at most 1 MiB; nil otherwise.
func readSmall(p string) []byte {
	if !regular(p) {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil
	}
	return data
}

// manifests are the files whose change means setup must run again.
var manifests = []string{
	"go.mod", "go.sum", "go.work", "go.work.sum",
	"package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", ".npmrc",
	"pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock",
}

// IsManifest reports whether a changed path (slash-separated, relative to
// the checkout) is a dependency manifest or lockfile: after a change to it
// the change is set up again from scratch before it is verified.
func IsManifest(p string) bool {
	base := path.Base(p)
	return slices.Contains(manifests, base) || (strings.HasSuffix(base, ".txt") && strings.Contains(base, "requirements"))
}
