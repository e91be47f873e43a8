package repoconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes files (path → content) under a fresh directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// line renders a step or command for comparison: "name|run|flags".
func stepLine(s SetupStep) string {
	net := ""
	if s.Network {
		net = "|network"
	}
	return s.Name + "|" + s.Run + net
}

func cmdLine(c Command) string {
	return c.Name + "|" + c.Run + "|" + string(c.Kind) + "|" + string(c.Runner) + "|" + strings.Join(c.Reports, ",")
}

const (
	venv    = "python3 -m venv --system-site-packages /work/.venv"
	pip     = "/work/.venv/bin/pip install --disable-pip-version-check --no-input"
	pytest  = "/work/.venv/bin/python -m pytest -rA -p no:cacheprovider --continue-on-collection-errors --junitxml=/tmp/selfcode-reports/pytest.xml"
	pyRep   = "/tmp/selfcode-reports/pytest.xml"
	goBuild = "build|go build ./...|build||"
	goVet   = "vet|go vet ./...|build||"
)

func TestInfer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		files  map[string]string
		setup  []string
		verify []string
	}{
		{"go without requirements needs no network",
			map[string]string{"go.mod": "module example.com/a\n\ngo 1.22\n"},
			nil,
			[]string{goBuild, goVet, "test|go test ./...|test|go|"}},
		{"go with requirements downloads them",
			map[string]string{"go.mod": "module example.com/a\n\ngo 1.22\n\nrequire example.com/words v1.0.0\n"},
			[]string{"go mod download|go mod download|network"},
			[]string{goBuild, goVet, "test|go test ./...|test|go|"}},
		{"node test runner without dependencies is offline",
			map[string]string{"package.json": `{"name":"a","scripts":{"test":"node --test"}}`},
			nil,
			[]string{"test|npm test|test|node-test|"}},
		{"jest with a lockfile, build script and tsconfig",
			map[string]string{"package.json": `{"scripts":{"build":"tsc","test":"jest --ci"},"devDependencies":{"jest":"^29"}}`, "package-lock.json": "{}", "tsconfig.json": "{}"},
			[]string{"install (npm)|npm ci --no-audit --no-fund|network"},
			[]string{"build|npm run build|build||",
				`typecheck|PATH="$PWD/node_modules/.bin:$PATH" tsc --noEmit -p .|build||`,
				"test|mkdir -p /tmp/selfcode-reports && npm test -- --json --outputFile=/tmp/selfcode-reports/jest.json|test|jest|/tmp/selfcode-reports/jest.json"}},
		{"dependencies without a lockfile: npm install",
			map[string]string{"package.json": `{"dependencies":{"left-pad":"1.3.0"},"scripts":{"test":"mocha test/"}}`},
			[]string{"install (npm)|npm install --no-audit --no-fund --no-package-lock|network"},
			[]string{"test|mkdir -p /tmp/selfcode-reports && npm test -- --reporter json --reporter-option output=/tmp/selfcode-reports/mocha.json|test|mocha|/tmp/selfcode-reports/mocha.json"}},
		{"yarn lockfile",
			map[string]string{"package.json": `{"devDependencies":{"vitest":"1"},"scripts":{"test":"vitest"}}`, "yarn.lock": ""},
			[]string{"install (yarn)|yarn install --frozen-lockfile --non-interactive|network"},
			[]string{"test|mkdir -p /tmp/selfcode-reports && yarn run test --run --reporter=default --reporter=json --outputFile=/tmp/selfcode-reports/vitest.json|test|vitest|/tmp/selfcode-reports/vitest.json"}},
		{"runner last in the script gets the reporter",
			map[string]string{"package.json": `{"scripts":{"test":"npm run lint && NODE_ENV=test npx jest"}}`},
			nil,
			[]string{"test|mkdir -p /tmp/selfcode-reports && npm test -- --json --outputFile=/tmp/selfcode-reports/jest.json|test|jest|/tmp/selfcode-reports/jest.json"}},
		{"runner not last: run as is",
			map[string]string{"package.json": `{"scripts":{"test":"jest && eslint ."}}`},
			nil,
			[]string{"test|npm test|test||"}},
		{"npm's placeholder test script is no test; the Makefile's is",
			map[string]string{"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`, "Makefile": "test:\n\t./run-tests\n"},
			nil,
			[]string{"test|make test|test||"}},
		{"requirements with pytest",
			map[string]string{"requirements.txt": "# deps\nrequests==2.31\n", "requirements-dev.txt": "pytest\n", "tests/test_a.py": "def test_a(): pass\n"},
			[]string{"python venv|" + venv, "pip install -r requirements-dev.txt|" + pip + " -r requirements-dev.txt|network", "pip install -r requirements.txt|" + pip + " -r requirements.txt|network"},
			[]string{"test|" + pytest + "|test|pytest|" + pyRep}},
		{"empty requirements fetch nothing",
			map[string]string{"requirements.txt": "# nothing yet\n\n"},
			[]string{"python venv|" + venv},
			[]string{"test|" + pytest + "|test|pytest|" + pyRep}},
		{"setuptools project without dependencies installs offline",
			map[string]string{"pyproject.toml": "[build-system]\nrequires = [\"setuptools>=61\"]\n\n[project]\nname = \"a\"\nversion = \"1\"\n"},
			[]string{"python venv|" + venv, "pip install the project|" + pip + " --no-build-isolation --no-index --no-deps -e ."},
			[]string{"test|" + pytest + "|test|pytest|" + pyRep}},
		{"project with dependencies and a test extra",
			map[string]string{"pyproject.toml": "[build-system]\nrequires = [\"hatchling\"]\n\n[project]\nname = \"a\"\ndependencies = [\"attrs\"]\n\n[project.optional-dependencies]\ntest = [\"pytest\"]\n"},
			[]string{"python venv|" + venv, "pip install the project|" + pip + " -e '.[test]'|network"},
			[]string{"test|" + pytest + "|test|pytest|" + pyRep}},
		{"unittest when nothing mentions pytest",
			map[string]string{"setup.cfg": "[metadata]\nname = a\n", "tests/test_a.py": "import unittest\n"},
			[]string{"python venv|" + venv},
			[]string{"test|/work/.venv/bin/python -m unittest discover -v -s tests|test|unittest|"}},
		{"Go beside a Makefile: the Makefile is not run",
			map[string]string{"go.mod": "module a\n", "Makefile": "test:\n\tgo test ./...\n"},
			nil,
			[]string{goBuild, goVet, "test|go test ./...|test|go|"}},
		{"Go and Node together: unique names",
			map[string]string{"go.mod": "module a\n", "package.json": `{"scripts":{"test":"node --test"}}`},
			nil,
			[]string{goBuild, goVet, "test (go)|go test ./...|test|go|", "test (node-test)|npm test|test|node-test|"}},
		{"nothing known", map[string]string{"README.md": "hi"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inf := Infer(tree(t, tt.files))
			var setup, verify []string
			for _, s := range inf.Setup {
				setup = append(setup, stepLine(s))
				if !s.Inferred {
					t.Errorf("step %q not marked inferred", s.Name)
				}
			}
			for _, c := range inf.Verify {
				verify = append(verify, cmdLine(c))
			}
			if strings.Join(setup, "\n") != strings.Join(tt.setup, "\n") {
				t.Errorf("setup =\n%s\nwant\n%s", strings.Join(setup, "\n"), strings.Join(tt.setup, "\n"))
			}
			if strings.Join(verify, "\n") != strings.Join(tt.verify, "\n") {
				t.Errorf("verify =\n%s\nwant\n%s", strings.Join(verify, "\n"), strings.Join(tt.verify, "\n"))
			}
		})
	}
}

func TestSetupSteps(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"go.mod": "module a\nrequire x v1\n"})
	parse := func(y string) *Config {
		c, err := Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name string
		cfg  *Config
		want []string
	}{
		{"no file: inferred", Default(), []string{"go mod download|go mod download|network"}},
		{"configured setup", parse("setup: [make deps]\nsetup_network: false"), []string{"setup 1|make deps"}},
		{"configured verify: no inferred setup", parse("verify: [{run: go test ./...}]"), nil},
		{"setup_network false applies to inferred steps", parse("setup_network: false"), []string{"go mod download|go mod download"}},
	}
	for _, tt := range tests {
		var got []string
		for _, s := range tt.cfg.SetupSteps(dir) {
			got = append(got, stepLine(s))
			if s.Timeout != tt.cfg.Limits.CommandTimeout {
				t.Errorf("%s: timeout %v", tt.name, s.Timeout)
			}
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestVerifyCommandsConfigured(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("reports: [\"out/*.xml\"]\nverify:\n  - {run: make test}\n  - {name: types, run: npx tsc --noEmit}\n  - {run: ./lint.sh}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cmd := range c.VerifyCommands(t.TempDir()) {
		got = append(got, cmdLine(cmd))
	}
	want := []string{"make|make test|test||out/*.xml", "types|npx tsc --noEmit|build||out/*.xml", "./lint.sh|./lint.sh|other||out/*.xml"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestGuess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		run    string
		kind   Kind
		runner Runner
	}{
		{"go test -race ./...", KindTest, RunnerGo},
		{"python -m pytest -x", KindTest, RunnerPytest},
		{"python3 -m unittest discover", KindTest, RunnerUnittest},
		{"npx jest --ci", KindTest, RunnerJest},
		{"npm test", KindTest, ""},
		{"make test", KindTest, ""},
		{"go build ./... && go test ./...", KindTest, RunnerGo},
		{"go vet ./...", KindBuild, ""},
		{"npx tsc --noEmit", KindBuild, ""},
		{"make", KindBuild, ""},
		{"golangci-lint run", KindOther, ""},
		{"echo pytest-ish", KindOther, ""},
		{"pytest && jest", KindTest, ""},
	} {
		if got := GuessKind(tc.run); got != tc.kind {
			t.Errorf("GuessKind(%q) = %q, want %q", tc.run, got, tc.kind)
		}
		if got := GuessRunner(tc.run); got != tc.runner {
			t.Errorf("GuessRunner(%q) = %q, want %q", tc.run, got, tc.runner)
		}
	}
}

func TestIsManifest(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"go.mod": true, "sub/go.sum": true, "package.json": true, "web/package-lock.json": true, "yarn.lock": true,
		"pyproject.toml": true, "requirements-dev.txt": true, "setup.py": true,
		"main.go": false, "README.md": false, "notes.txt": false, "src/package.js": false,
	} {
		if got := IsManifest(p); got != want {
			t.Errorf("IsManifest(%q) = %v, want %v", p, got, want)
		}
	}
}
