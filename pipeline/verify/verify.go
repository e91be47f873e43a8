package verify

import (
	"github.com/selfcode/selfcode/pipeline/testreport"

	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/selfcode/selfcode/internal/utf8cut"
)

// MaxOutputLines bounds CommandResult.Output (head and tail are kept).
const MaxOutputLines = 400

// maxLineBytes bounds one line of CommandResult.Output.
const maxLineBytes = 2000

// maxDiagnostics bounds CommandResult.Diagnostics.
const maxDiagnostics = 200

// Command is one verification command from the repository configuration.
type Command struct {
	Name    string
	Run     string        // shell command line
	Timeout time.Duration // zero: the runner's default
}

// Outcome is what the sandbox reports about one command.
type Outcome struct {
	ExitCode  int
	Output    string // stdout and stderr interleaved
	Duration  time.Duration
	TimedOut  bool // the command outlived its timeout (map the sandbox's Killed here too)
	Truncated bool // the output cap stopped the command
	OOMKilled bool
}

// Runner executes one command in the prepared checkout. An error means the
// command could not be run at all (the sandbox is broken or ctx ended), not
// that it failed.
type Runner interface {
	Exec(ctx context.Context, c Command) (Outcome, error)
}

// Run is the result of running a list of verification commands.
type Run struct {
	Commands []CommandResult `json:"commands"`
	// Passed is true when there was at least one command and every command
	// passed.
	Passed bool `json:"passed"`
}

// CommandResult is what one verification command did.
type CommandResult struct {
	Name string `json:"name"`
	Run  string `json:"run"` // as configured
	// Executed is the command line actually run when it differs from Run
	// (`-json` added to `go test`).
	Executed string `json:"executed,omitempty"`
	// Passed: exit status 0 and not stopped by a timeout, the output cap or
	// the OOM killer.
	Passed    bool          `json:"passed"`
	ExitCode  int           `json:"exit_code"`
	Duration  time.Duration `json:"duration"`
	Output    string        `json:"output,omitempty"` // trimmed; for go test, rebuilt from the events like plain `go test` output
	TimedOut  bool          `json:"timed_out,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	OOMKilled bool          `json:"oom_killed,omitempty"`
	// Tests is set for `go test` commands whose output held test events.
	Tests *testreport.Report `json:"tests,omitempty"`
	// Diagnostics are compiler and vet errors found in the full output.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// Error is set when the runner could not run the command.
	Error string `json:"error,omitempty"`
	// Skipped is set for commands not run because an earlier one could
	// not be run.
	Skipped bool `json:"skipped,omitempty"`
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
			run.Commands = append(run.Commands, CommandResult{Name: c.Name, Run: c.Run, Skipped: true})
			run.Passed = false
			continue
		}
		res, err := runOne(ctx, r, c)
		if err != nil {
			runErr = fmt.Errorf("run verify command %q: %w", c.Name, err)
		}
		run.Passed = run.Passed && res.Passed
		run.Commands = append(run.Commands, res)
	}
	return run, runErr
}

func runOne(ctx context.Context, r Runner, c Command) (CommandResult, error) {
	res := CommandResult{Name: c.Name, Run: c.Run}
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
	res.ExitCode = out.ExitCode
	res.Duration = out.Duration
	res.TimedOut = out.TimedOut
	res.Truncated = out.Truncated
	res.OOMKilled = out.OOMKilled
	res.Passed = out.ExitCode == 0 && !out.TimedOut && !out.Truncated && !out.OOMKilled
	text := out.Output
	diagSource := out.Output
	if goTest {
		if rep, rebuilt := testreport.ParseGoJSON(out.Output); rep != nil {
			res.Tests = rep
			text = rebuilt
			diagSource = strings.Join(rep.Errors, "\n")
		}
	}
	res.Output = Trim(clipLines(text, maxLineBytes), MaxOutputLines)
	res.Diagnostics = ParseDiagnostics(diagSource)
	if len(res.Diagnostics) > maxDiagnostics {
		res.Diagnostics = res.Diagnostics[:maxDiagnostics]
	}
	return res, nil
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
