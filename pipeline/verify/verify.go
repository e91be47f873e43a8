package verify

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/selfcode/selfcode/internal/utf8cut"
	"github.com/selfcode/selfcode/pipeline/testreport"
)

// MaxOutputLines bounds CommandResult.Output (head and tail are kept).
const MaxOutputLines = 400

// maxLineBytes bounds one line of CommandResult.Output.
const maxLineBytes = 2000

// maxDiagnostics bounds CommandResult.Diagnostics.
const maxDiagnostics = 200

// CommandKind says what a verification command checks. The rule needs it:
// a run in which no test and no build actually ran proves nothing.
type CommandKind string

// Command kinds.
const (
	BuildCommand CommandKind = "build" // compiles or type-checks
	TestCommand  CommandKind = "test"  // runs tests
	OtherCommand CommandKind = ""      // not known
	// SmokeCommand is a step of the smoke stage (image build, container
	// start, health, a request): compared with the base command by command.
	SmokeCommand CommandKind = "smoke"
)

// Command is one verification command from the repository configuration.
type Command struct {
	Name    string
	Run     string        // shell command line
	Timeout time.Duration // zero: the runner's default
	Kind    CommandKind
	// Reports are the test result files the command writes: absolute
	// sandbox paths, or doublestar globs relative to the work tree. The
	// Runner reads them after the command (Outcome.Files).
	Reports []string
	// Runner names the test runner when known ("go", "pytest", …), to
	// run one failing test again alone.
	Runner string
	// OutputBytes bounds the output kept (head and tail); zero: the
	// runner's default.
	OutputBytes int64
}

// Outcome is what the sandbox reports about one command.
type Outcome struct {
	ExitCode int
	Output   string // stdout and stderr interleaved
	Duration time.Duration
	TimedOut bool // the command outlived its timeout (map the sandbox's Killed here too)
	// Truncated: the middle of a long output was cut (head and tail kept);
	// the exit status stands.
	Truncated bool
	// OutputStopped: the command printed so much that it was stopped.
	OutputStopped bool
	OOMKilled     bool
	// Files are the report files the command wrote, by path.
	Files map[string][]byte
}

// Runner executes one command in the prepared checkout. An error means the
// command could not be run at all (the sandbox is broken or ctx ended), not
// that it failed.
type Runner interface {
	Exec(ctx context.Context, c Command) (Outcome, error)
}

// Run is the result of running a list of verification commands.
type Run struct {
	// Setup holds the setup steps' results, in order. When one fails the
	// verification commands are not run (Skipped, SkipReason set).
	Setup    []CommandResult `json:"setup,omitempty"`
	Commands []CommandResult `json:"commands"`
	// Passed is true when there was at least one command and every command
	// passed.
	Passed bool `json:"passed"`
}

// SetupFailed returns the first setup step that failed, if any.
func (r Run) SetupFailed() (CommandResult, bool) {
	for _, s := range r.Setup {
		if !s.Passed {
			return s, true
		}
	}
	return CommandResult{}, false
}

// CommandResult is what one verification command did.
type CommandResult struct {
	Name string      `json:"name"`
	Run  string      `json:"run"` // as configured
	Kind CommandKind `json:"kind,omitempty"`
	// Executed is the command line actually run when it differs from Run
	// (`-json` added to `go test`).
	Executed string `json:"executed,omitempty"`
	// Passed: exit status 0 and not stopped by a timeout, the output stop
	// limit or the OOM killer. A cut output never fails a command.
	Passed   bool          `json:"passed"`
	ExitCode int           `json:"exit_code"`
	Duration time.Duration `json:"duration"`
	Output   string        `json:"output,omitempty"` // trimmed; for go test, rebuilt from the events like plain `go test` output
	TimedOut bool          `json:"timed_out,omitempty"`
	// Missing: the shell could not find or execute the command (exit 127
	// or 126): the sandbox lacks a tool the command needs.
	Missing       bool `json:"missing,omitempty"`
	Truncated     bool `json:"truncated,omitempty"` // the middle of the output was cut
	OutputStopped bool `json:"output_stopped,omitempty"`
	OOMKilled     bool `json:"oom_killed,omitempty"`
	// Tests is what the command's output or report files say test by
	// test; nil when they name no tests.
	Tests *testreport.Report `json:"tests,omitempty"`
	// Reports lists the report files read, and ReportErrors the ones that
	// could not be read as test results.
	Reports      []string `json:"reports,omitempty"`
	ReportErrors []string `json:"report_errors,omitempty"`
	// Flaky are tests that failed here and passed when run again alone.
	Flaky []testreport.ID `json:"flaky,omitempty"`
	// Diagnostics are compiler and vet errors found in the full output.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// Error is set when the runner could not run the command.
	Error string `json:"error,omitempty"`
	// Skipped is set for commands not run, with the reason.
	Skipped    bool   `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
}

// TestsKnown reports whether the command's tests are known in full: its
// output or report files named tests (or broken suites) and were not cut.
func (c CommandResult) TestsKnown() bool {
	t := c.Tests
	return t != nil && !t.Partial && (t.Len() > 0 || len(t.Broken) > 0 || len(t.Suites) > 0)
}

// Ran reports whether the command actually checked something: it ran at
// least one test, or it is a build that ran to its end, or it is a command
// of unknown kind that passed while naming no tests (judged command by
// command). A test command whose runner reported no test ran nothing.
func (c CommandResult) Ran() bool {
	switch {
	case c.Skipped || c.Error != "" || c.Missing || c.TimedOut:
		return false
	case c.Tests != nil && c.Tests.Ran():
		return true
	case c.Kind == BuildCommand:
		return true
	case c.Tests != nil:
		return false // a runner reported, and no test ran
	}
	return c.Passed
}

// SkipSetupFailed is the SkipReason of commands not run after a setup step
// failed.
const SkipSetupFailed = "setup failed"

// Skip returns a Run in which cmds were not run, for why.
func Skip(cmds []Command, why string) Run {
	run := Run{Commands: make([]CommandResult, 0, len(cmds))}
	for _, c := range cmds {
		run.Commands = append(run.Commands, CommandResult{Name: c.Name, Run: c.Run, Kind: c.Kind, Skipped: true, SkipReason: why})
	}
	return run
}

// Verify runs cmds in order through r. A failing command does not stop the
// run: every command runs so the report shows all of them (when the build
// fails, later `go test` output is mostly the same compile errors, which
// Compare and Summarize handle). A runner error does stop it: that command
// gets Error, the remaining ones Skipped, and Verify returns the partial Run
// with an error (the sandbox is likely gone, or ctx ended), so the caller can
// tell infrastructure failure from a failing check.
func Verify(ctx context.Context, r Runner, cmds []Command) (Run, error) {
	run := Run{Commands: make([]CommandResult, 0, len(cmds)), Passed: len(cmds) > 0}
	var runErr error
	for _, c := range cmds {
		if runErr == nil {
			if err := ctx.Err(); err != nil {
				runErr = fmt.Errorf("verify canceled before %q: %w", c.Name, err)
			}
		}
		if runErr != nil {
			run.Commands = append(run.Commands, CommandResult{Name: c.Name, Run: c.Run, Kind: c.Kind, Skipped: true, SkipReason: "an earlier command could not be run"})
			run.Passed = false
			continue
		}
		res, err := RunOne(ctx, r, c)
		if err != nil {
			runErr = fmt.Errorf("run verify command %q: %w", c.Name, err)
		}
		run.Passed = run.Passed && res.Passed
		run.Commands = append(run.Commands, res)
	}
	return run, runErr
}

// RunOne runs one command and reads its results: `go test` is run with
// -json, report files are parsed, and otherwise the printed output is
// recognised by trying each test runner's format.
func RunOne(ctx context.Context, r Runner, c Command) (CommandResult, error) {
	res := CommandResult{Name: c.Name, Run: c.Run, Kind: c.Kind}
	exec := c
	goTest := IsGoTest(c.Run)
	if goTest {
		exec.Run = AddJSONFlag(c.Run)
		if exec.Run != c.Run {
			res.Executed = exec.Run
		}
	}
	out, err := r.Exec(ctx, exec)
	if err != nil {
		res.Error = err.Error()
		return res, err
	}
	return Result(c, res.Executed, out), nil
}

// Result turns a command's outcome into its result.
func Result(c Command, executed string, out Outcome) CommandResult {
	res := CommandResult{Name: c.Name, Run: c.Run, Kind: c.Kind, Executed: executed,
		ExitCode: out.ExitCode, Duration: out.Duration, TimedOut: out.TimedOut,
		Truncated: out.Truncated, OutputStopped: out.OutputStopped, OOMKilled: out.OOMKilled}
	res.Missing = !out.TimedOut && (out.ExitCode == 127 || out.ExitCode == 126)
	res.Passed = out.ExitCode == 0 && !out.TimedOut && !out.OutputStopped && !out.OOMKilled
	text := out.Output
	diagSource := out.Output
	var reports []*testreport.Report
	if IsGoTest(c.Run) {
		if rep, rebuilt := testreport.ParseGoJSON(out.Output); rep != nil {
			reports = append(reports, rep)
			text = rebuilt
			diagSource = strings.Join(rep.Errors, "\n")
		}
	} else {
		reports = append(reports, testreport.ParseEach(out.Output)...)
	}
	for _, rep := range reports {
		// What a cut output shows is not the whole run.
		rep.Partial = rep.Partial || out.Truncated || out.OutputStopped
	}
	for _, name := range slices.Sorted(maps.Keys(out.Files)) {
		rep, err := testreport.ParseFile(name, out.Files[name])
		if err != nil {
			res.ReportErrors = append(res.ReportErrors, err.Error())
			continue
		}
		res.Reports = append(res.Reports, name)
		reports = append(reports, rep)
	}
	if len(out.Files) > 0 && len(res.Reports) > 0 {
		// Files are complete where the printed output may be cut, so they
		// win over the same runner's printed results (which name tests
		// their own way); printed results of another runner (go test
		// beside pytest's JUnit file in one make test) are added.
		files := testreport.Merge(reports[len(reports)-len(res.Reports):]...)
		merged := []*testreport.Report{files}
		for _, p := range reports[:len(reports)-len(res.Reports)] {
			if !files.Covers(p) {
				merged = append(merged, p)
			}
		}
		res.Tests = testreport.Merge(merged...)
	} else {
		res.Tests = testreport.Merge(reports...)
	}
	res.Output = Trim(clipLines(text, maxLineBytes), MaxOutputLines)
	res.Diagnostics = ParseDiagnostics(diagSource)
	if len(res.Diagnostics) > maxDiagnostics {
		res.Diagnostics = res.Diagnostics[:maxDiagnostics]
	}
	return res
}

// goTestRE finds `go test` as a command word: at the start or after a shell
// separator, followed by a space or the end.
var goTestRE = regexp.MustCompile(`(^|[\s;&|(])go\s+test(\s|$)`)

// jsonFlagRE finds an existing -json flag.
var jsonFlagRE = regexp.MustCompile(`(^|\s)--?json(=\S*)?(\s|$)`)

// IsGoTest reports whether the shell command line runs `go test`.
func IsGoTest(run string) bool { return goTestRE.MatchString(run) }

// AddJSONFlag inserts `-json` right after every `go test` in run, unless the
// command line already has a -json flag.
func AddJSONFlag(run string) string {
	if !IsGoTest(run) || jsonFlagRE.MatchString(run) {
		return run
	}
	var b strings.Builder
	rest := run
	for {
		loc := goTestRE.FindStringSubmatchIndex(rest)
		if loc == nil {
			b.WriteString(rest)
			return b.String()
		}
		// loc[4]:loc[5] is the separator after "test"; insert before it.
		end := loc[4]
		b.WriteString(rest[:end])
		b.WriteString(" -json")
		rest = rest[end:]
	}
}

// clipLines shortens lines longer than n bytes.
func clipLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	lines := strings.Split(s, "\n")
	changed := false
	for i, l := range lines {
		if len(l) > n {
			lines[i] = utf8cut.Cut(l, n) + " …"
			changed = true
		}
	}
	if !changed {
		return s
	}
	return strings.Join(lines, "\n")
}
