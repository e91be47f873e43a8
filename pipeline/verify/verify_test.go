package verify

import (
	"github.com/selfcode/selfcode/pipeline/testreport"

	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAddJSONFlag(t *testing.T) {
	tests := []struct {
		in, want string
		goTest   bool
	}{
		{"go test ./...", "go test -json ./...", true},
		{"go test", "go test -json", true},
		{"go  test -race ./...", "go  test -json -race ./...", true},
		{"go test -json ./...", "go test -json ./...", true},
		{"go test -v ./... -json", "go test -v ./... -json", true},
		{"cd sub && go test ./...", "cd sub && go test -json ./...", true},
		{"go test ./a && go test ./b", "go test -json ./a && go test -json ./b", true},
		{"GOFLAGS=-mod=mod go test ./...", "GOFLAGS=-mod=mod go test -json ./...", true},
		{"(go test ./...)", "(go test -json ./...)", true},
		{"go build ./...", "go build ./...", false},
		{"go vet ./...", "go vet ./...", false},
		{"make test", "make test", false},
		{"go testdata", "go testdata", false},
		{"cargo test", "cargo test", false},
		{"mygo test", "mygo test", false},
	}
	for _, tc := range tests {
		if got := IsGoTest(tc.in); got != tc.goTest {
			t.Errorf("IsGoTest(%q) = %v, want %v", tc.in, got, tc.goTest)
		}
		if got := AddJSONFlag(tc.in); got != tc.want {
			t.Errorf("AddJSONFlag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestVerify(t *testing.T) {
	errBoom := errors.New("container gone")
	tests := []struct {
		name       string
		outcomes   map[string]Outcome
		errs       map[string]error
		cmds       []Command
		wantErr    bool
		wantPassed bool
		// per command: passed, error set, skipped
		want []CommandResult
		ran  []string // command lines the runner saw
	}{
		{
			name:       "all pass",
			outcomes:   map[string]Outcome{"build": {}, "test": {Output: fixture(t, "brokenbase.jsonl")}},
			cmds:       []Command{{Name: "build", Run: "go build ./..."}, {Name: "test", Run: "go test ./...", Timeout: time.Minute}},
			wantPassed: true,
			want:       []CommandResult{{Name: "build", Passed: true}, {Name: "test", Passed: true}},
			ran:        []string{"go build ./...", "go test -json ./..."},
		},
		{
			name: "keeps going after a failure",
			outcomes: map[string]Outcome{
				"build": {ExitCode: 1, Output: fixture(t, "broken-build.txt")},
				"test":  {ExitCode: 1, Output: fixture(t, "broken.jsonl")},
				"lint":  {},
			},
			cmds: []Command{{Name: "build", Run: "go build ./..."}, {Name: "test", Run: "go test ./..."}, {Name: "lint", Run: "true"}},
			want: []CommandResult{{Name: "build"}, {Name: "test"}, {Name: "lint", Passed: true}},
			ran:  []string{"go build ./...", "go test -json ./...", "true"},
		},
		{
			name:     "timeout, the output stop and OOM fail even with exit 0; a cut output does not",
			outcomes: map[string]Outcome{"a": {TimedOut: true}, "b": {OutputStopped: true}, "c": {OOMKilled: true}, "d": {Truncated: true}},
			cmds:     []Command{{Name: "a", Run: "a"}, {Name: "b", Run: "b"}, {Name: "c", Run: "c"}, {Name: "d", Run: "d"}},
			want:     []CommandResult{{Name: "a", TimedOut: true}, {Name: "b", OutputStopped: true}, {Name: "c", OOMKilled: true}, {Name: "d", Truncated: true, Passed: true}},
			ran:      []string{"a", "b", "c", "d"},
		},
		{
			name:     "runner error stops the run",
			outcomes: map[string]Outcome{"build": {}},
			errs:     map[string]error{"vet": errBoom},
			cmds:     []Command{{Name: "build", Run: "go build ./..."}, {Name: "vet", Run: "go vet ./..."}, {Name: "test", Run: "go test ./..."}},
			wantErr:  true,
			want:     []CommandResult{{Name: "build", Passed: true}, {Name: "vet", Error: errBoom.Error()}, {Name: "test", Skipped: true}},
			ran:      []string{"go build ./...", "go vet ./..."},
		},
		{
			name: "no commands",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &scriptRunner{outcomes: tc.outcomes, errs: tc.errs}
			run, err := Verify(context.Background(), r, tc.cmds)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, errBoom) {
				t.Errorf("err = %v, want it to wrap the runner's error", err)
			}
			if run.Passed != tc.wantPassed {
				t.Errorf("Passed = %v, want %v", run.Passed, tc.wantPassed)
			}
			if len(run.Commands) != len(tc.want) {
				t.Fatalf("%d results, want %d", len(run.Commands), len(tc.want))
			}
			for i, w := range tc.want {
				g := run.Commands[i]
				if g.Name != w.Name || g.Passed != w.Passed || g.Error != w.Error || g.Skipped != w.Skipped ||
					g.TimedOut != w.TimedOut || g.Truncated != w.Truncated || g.OOMKilled != w.OOMKilled || g.OutputStopped != w.OutputStopped {
					t.Errorf("command %d = %+v, want %+v", i, g, w)
				}
				if g.Run != tc.cmds[i].Run {
					t.Errorf("command %d Run = %q, want the configured %q", i, g.Run, tc.cmds[i].Run)
				}
			}
			var ran []string
			for _, c := range r.got {
				ran = append(ran, c.Run)
			}
			if !slices.Equal(ran, tc.ran) {
				t.Errorf("runner saw %q, want %q", ran, tc.ran)
			}
			for i, c := range r.got {
				if c.Timeout != tc.cmds[i].Timeout || c.Name != tc.cmds[i].Name {
					t.Errorf("runner got %+v for %+v", c, tc.cmds[i])
				}
			}
		})
	}
}

func TestVerifyGoTestResult(t *testing.T) {
	run := runFixture(t,
		step{name: "build", run: "go build ./...", file: "broken-build.txt", exit: 1},
		step{name: "test", run: "go test ./...", file: "broken.jsonl", exit: 1},
	)
	build, test := run.Commands[0], run.Commands[1]
	if build.Tests != nil || len(build.Diagnostics) != 3 {
		t.Errorf("build: tests %v, %d diagnostics; want none and 3", build.Tests, len(build.Diagnostics))
	}
	if test.Tests == nil || test.Executed != "go test -json ./..." {
		t.Fatalf("test: report %v, executed %q", test.Tests, test.Executed)
	}
	if len(test.Diagnostics) != 3 || test.Diagnostics[0].Package != "example.com/broken/bad" {
		t.Errorf("test diagnostics = %+v", test.Diagnostics)
	}
	if strings.Contains(test.Output, `"Action"`) {
		t.Errorf("test output is raw JSON, want the rebuilt text:\n%s", test.Output)
	}
}

func TestVerifyCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &scriptRunner{outcomes: map[string]Outcome{"a": {}}}
	run, err := Verify(ctx, r, []Command{{Name: "a", Run: "true"}, {Name: "b", Run: "true"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(r.got) != 0 || run.Passed || !run.Commands[0].Skipped || !run.Commands[1].Skipped {
		t.Errorf("ran %v; run %+v", r.got, run)
	}
}

func TestVerifyOutputTrimmed(t *testing.T) {
	long := strings.Repeat("line\n", MaxOutputLines*3) + strings.Repeat("x", maxLineBytes*2) + "\n"
	r := &scriptRunner{outcomes: map[string]Outcome{"a": {ExitCode: 2, Output: long}}}
	run, err := Verify(context.Background(), r, []Command{{Name: "a", Run: "make test"}})
	if err != nil {
		t.Fatal(err)
	}
	out := run.Commands[0].Output
	if n := strings.Count(out, "\n"); n > MaxOutputLines+1 {
		t.Errorf("output has %d lines, want at most %d", n, MaxOutputLines+1)
	}
	if !strings.Contains(out, "lines trimmed") || len(out) > MaxOutputLines*(maxLineBytes+10) {
		t.Errorf("output not trimmed: %d bytes", len(out))
	}
	for l := range strings.SplitSeq(out, "\n") {
		if len(l) > maxLineBytes+len(" …") {
			t.Errorf("line of %d bytes kept", len(l))
		}
	}
}

// TestVerifyLiveGoTest runs the host's real `go` on throwaway modules and
// compares a base with a head, proving the parser and Compare handle live
// output, not only the captured fixtures.
func TestVerifyLiveGoTest(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	if testing.Short() {
		t.Skip("builds and runs test binaries")
	}
	cmds := []Command{
		{Name: "build", Run: "go build ./..."},
		{Name: "vet", Run: "go vet ./..."},
		{Name: "test", Run: "go test ./...", Timeout: 5 * time.Minute},
	}
	ctx := context.Background()
	baseDir, headDir := copyModule(t, "mix"), copyModule(t, "mixhead")
	base, err := Verify(ctx, hostRunner{dir: baseDir}, cmds)
	if err != nil {
		t.Fatal(err)
	}
	head, err := Verify(ctx, hostRunner{dir: headDir}, cmds)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Run{base, head} {
		if !r.Commands[0].Passed || !r.Commands[1].Passed || r.Commands[2].Passed || r.Commands[2].Tests == nil {
			t.Fatalf("unexpected run: %+v", r)
		}
	}
	const calc, strs = "example.com/mix/calc", "example.com/mix/strs"
	if got, want := base.Commands[2].Tests.Failures(), append(ids(calc, "TestSub", "TestTable/wrong"), ids(strs, "TestFirstPanics")...); !slices.Equal(got, want) {
		t.Errorf("base failures = %v, want %v", got, want)
	}
	cmp := Compare(base, head)
	if cmp.Verified {
		t.Error("head verified despite regressions")
	}
	tc := cmp.Commands[2]
	if got, want := findingTests(tc.Regressions), append(ids(calc, "TestNew"), ids(strs, "TestShout")...); !slices.Equal(got, want) {
		t.Errorf("regressions = %v, want %v", got, want)
	}
	if got, want := findingTests(tc.Fixed), ids(calc, "TestSub"); !slices.Equal(got, want) {
		t.Errorf("fixed = %v, want %v", got, want)
	}
	if got, want := findingTests(tc.PreExisting), append(ids(calc, "TestTable/wrong"), ids(strs, "TestFirstPanics")...); !slices.Equal(got, want) {
		t.Errorf("pre-existing = %v, want %v", got, want)
	}
	sum := Summarize(cmp, head, SummaryOptions{WorkDir: headDir})
	if strings.Contains(sum, headDir) || !strings.Contains(sum, `Shout = "HI?"`) {
		t.Errorf("summary:\n%s", sum)
	}
}

func findingTests(fs []Finding) []testreport.ID {
	var out []testreport.ID
	for _, f := range fs {
		if f.Kind == KindTest {
			out = append(out, f.Test)
		}
	}
	return out
}

// A report file wins over the same runner's printed results, which name
// the tests their own way; another runner's printed results are added.
func TestResultReportFiles(t *testing.T) {
	t.Parallel()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "pytest", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	junit, printed, gotest := read("junit.xml"), string(read("rA.txt")), string(read("gotest-v.txt"))
	c := Command{Name: "test", Run: "make test", Kind: TestCommand, Reports: []string{"/tmp/r/*.xml"}}
	res := Result(c, "", Outcome{ExitCode: 1, Output: printed, Files: map[string][]byte{"/tmp/r/pytest.xml": junit}})
	if res.Tests == nil || res.Tests.Len() != 9 || res.Tests.Format != testreport.FormatJUnit {
		t.Fatalf("pytest output + JUnit: %d tests (%v), want the file's 9", res.Tests.Len(), res.Tests)
	}
	res = Result(c, "", Outcome{ExitCode: 1, Output: gotest + printed, Files: map[string][]byte{"/tmp/r/pytest.xml": junit}})
	if res.Tests.Len() != 9+6 || res.Tests.Tests[testreport.ID{Suite: "example.com/calc/calc", Name: "TestSub"}] != testreport.Pass {
		t.Fatalf("go test + pytest output + JUnit: %d tests, want 15", res.Tests.Len())
	}
	// A cut printed output does not make the complete file partial.
	res = Result(c, "", Outcome{ExitCode: 1, Output: printed, Truncated: true, Files: map[string][]byte{"/tmp/r/pytest.xml": junit}})
	if res.Tests.Partial || !res.TestsKnown() {
		t.Fatalf("file report made partial by a cut output")
	}
	// A file that is not a report is said so, and the printed output is used.
	res = Result(c, "", Outcome{ExitCode: 1, Output: printed, Files: map[string][]byte{"/tmp/r/x.xml": []byte("<html/>")}})
	if len(res.ReportErrors) != 1 || res.Tests.Format != testreport.FormatPytest {
		t.Fatalf("bad file: errors %q, format %v", res.ReportErrors, res.Tests.Format)
	}
}
