package verify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/selfcode/selfcode/pipeline/testreport"
)

// Verdict is what verification says about a change (contract section 6).
type Verdict string

// Verdicts.
const (
	// Verified: every verify command ran on the change (none missing, none
	// timed out, setup succeeded), something was actually built or tested,
	// and nothing that passed on the base fails on the change.
	Verified Verdict = "verified"
	// Failed: something that passed on the base (or did not exist there)
	// fails on the change.
	Failed Verdict = "failed"
	// Unverified: nothing shows the change works, and nothing shows it
	// broke anything either; Comparison.Reasons say why.
	Unverified Verdict = "unverified"
)

// Class is how a command or finding on the head compares with the base.
type Class string

// Classes.
const (
	ClassPass        Class = "pass"        // passes (and did on the base, or the base did not run it)
	ClassRegression  Class = "regression"  // fails on the head but not on the base
	ClassPreExisting Class = "preexisting" // fails the same way on the base
	ClassFixed       Class = "fixed"       // failed on the base, passes on the head
	ClassUnknown     Class = "unknown"     // could not be judged: not run, missing, timed out, or failing on the base too with its tests unknown
)

// FindingKind says what a Finding is about.
type FindingKind string

// Finding kinds.
const (
	KindTest       FindingKind = "test"       // a failing test
	KindPackage    FindingKind = "package"    // a suite (package, test file) failing with no failing test: build failure, import error, TestMain
	KindDiagnostic FindingKind = "diagnostic" // a compiler or vet error
	KindCommand    FindingKind = "command"    // the command failed with nothing more specific to blame
)

// Finding is one failure, or one fixed failure, of one command.
type Finding struct {
	Command string      `json:"command"`
	Kind    FindingKind `json:"kind"`
	// Subject is the test, the suite, the diagnostic ("file:line:
	// message") or the command's failure ("timed out").
	Subject string        `json:"subject"`
	Test    testreport.ID `json:"test,omitzero"` // KindTest only
}

// String describes the finding for a person or a model.
func (f Finding) String() string {
	switch f.Kind {
	case KindTest:
		return fmt.Sprintf("%s: test %s", f.Command, f.Test)
	case KindPackage:
		return fmt.Sprintf("%s: %s", f.Command, f.Subject)
	case KindDiagnostic:
		return fmt.Sprintf("%s: %s", f.Command, f.Subject)
	default:
		return fmt.Sprintf("%s: command %s", f.Command, f.Subject)
	}
}

// Reason says why a change could not be verified, and what would let it be.
type Reason struct {
	Command string `json:"command,omitempty"` // the verify command or setup step concerned
	Why     string `json:"why"`
	Next    string `json:"next,omitempty"` // what to configure so it can be verified
}

// TestCounts counts a command's tests on one side.
type TestCounts struct {
	Pass int `json:"pass"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// CommandComparison compares one command of the head run with the base.
type CommandComparison struct {
	Name        string    `json:"name"`
	Class       Class     `json:"class"`
	Regressions []Finding `json:"regressions,omitempty"`
	PreExisting []Finding `json:"preexisting,omitempty"`
	Fixed       []Finding `json:"fixed,omitempty"`
	Flaky       []Finding `json:"flaky,omitempty"`
	// Notes mention tests that ran on the base only, or became skipped.
	Notes []string `json:"notes,omitempty"`
	// Base and Head count the command's tests when its runner named them.
	Base *TestCounts `json:"base_tests,omitempty"`
	Head *TestCounts `json:"head_tests,omitempty"`
	// regressionKeys are the keys of Regressions, for Summarize.
	regressionKeys map[string]bool
}

// Counts classifies the head's commands, for metrics.
type Counts struct {
	Pass        int `json:"pass"`
	Regression  int `json:"regression"`
	PreExisting int `json:"preexisting"`
	Fixed       int `json:"fixed"`
	Unknown     int `json:"unknown"`
}

// Comparison is the head run judged against the base run.
type Comparison struct {
	Verdict Verdict `json:"verdict"`
	// Verified is Verdict == Verified.
	Verified bool `json:"verified"`
	// Reasons say why the change is unverified (or, with regressions, what
	// else could not be judged).
	Reasons  []Reason            `json:"reasons,omitempty"`
	Commands []CommandComparison `json:"commands"`
	// Human-readable lists across all commands ("test: test TestX (pkg)").
	Regressions []string `json:"regressions,omitempty"`
	PreExisting []string `json:"preexisting,omitempty"` // for the report: "these also fail on the base"
	Fixed       []string `json:"fixed,omitempty"`
	Flaky       []string `json:"flaky,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	Counts      Counts   `json:"counts"`
	// Fixable says a fix round can help: the change broke something (a
	// regression, or a command that now times out). Never set for a base
	// that was already broken.
	Fixable bool `json:"fixable"`
}

// maxMissingListed bounds the tests listed by name per package in notes.
const maxMissingListed = 10

// Compare judges head against base — the one truth rule, contract section 6.
// Commands are matched by name and compared test by test wherever their
// output or report files name tests, command by command otherwise. A
// failure on the head that is not in the base's set is a regression — a
// test that passed on the base or did not exist there, a suite that no
// longer builds or loads, a compiler or vet error the base did not have, a
// command that passed on the base. A command failing on the base as well
// counts only when its tests are known on both sides; otherwise it proves
// nothing and the change is Unverified, as when setup failed, a command is
// missing or timed out, or no test and no build actually ran. Regressions
// win: a change that breaks something is Failed whatever else is unknown.
func Compare(base, head Run) Comparison {
	cmp := Comparison{Commands: make([]CommandComparison, 0, len(head.Commands))}
	if s, failed := head.SetupFailed(); failed {
		cmp.Reasons = append(cmp.Reasons, setupReason(s, base))
	}
	used := make([]bool, len(base.Commands))
	ran := false
	for _, hc := range head.Commands {
		var bc *CommandResult
		for i := range base.Commands {
			if !used[i] && base.Commands[i].Name == hc.Name {
				used[i] = true
				bc = &base.Commands[i]
				break
			}
		}
		cc := compareCommand(bc, hc)
		ran = ran || hc.Ran()
		if r, ok := unknownReason(bc, hc, cc); ok {
			cmp.Reasons = append(cmp.Reasons, r)
		}
		if hc.TimedOut && (bc == nil || !bc.TimedOut) {
			cmp.Fixable = true // a change can make a command hang
		}
		cmp.add(cc)
	}
	for i, bc := range base.Commands {
		if !used[i] {
			cmp.Notes = append(cmp.Notes, fmt.Sprintf("%s: ran on the base only", bc.Name))
		}
	}
	_, setupFailed := head.SetupFailed()
	if len(head.Commands) == 0 && !setupFailed {
		cmp.Reasons = append(cmp.Reasons, Reason{Why: "no verify command was configured or could be inferred",
			Next: "add `verify:` to .selfcode.yml with the repository's build and test commands"})
	} else if !ran && len(cmp.Reasons) == 0 && len(cmp.Regressions) == 0 {
		cmp.Reasons = append(cmp.Reasons, Reason{Why: "no test and no build actually ran",
			Next: "configure `verify:` in .selfcode.yml with commands that build the code and run its tests"})
	}
	switch {
	case len(cmp.Regressions) > 0:
		cmp.Verdict = Failed
		cmp.Fixable = true
	case len(cmp.Reasons) > 0:
		cmp.Verdict = Unverified
	default:
		cmp.Verdict = Verified
	}
	cmp.Verified = cmp.Verdict == Verified
	return cmp
}

func (cmp *Comparison) add(cc CommandComparison) {
	cmp.Commands = append(cmp.Commands, cc)
	for _, f := range cc.Regressions {
		cmp.Regressions = append(cmp.Regressions, f.String())
	}
	for _, f := range cc.PreExisting {
		cmp.PreExisting = append(cmp.PreExisting, f.String())
	}
	for _, f := range cc.Fixed {
		cmp.Fixed = append(cmp.Fixed, f.String())
	}
	for _, f := range cc.Flaky {
		cmp.Flaky = append(cmp.Flaky, f.String())
	}
	for _, n := range cc.Notes {
		cmp.Notes = append(cmp.Notes, cc.Name+": "+n)
	}
	switch cc.Class {
	case ClassPass:
		cmp.Counts.Pass++
	case ClassRegression:
		cmp.Counts.Regression++
	case ClassPreExisting:
		cmp.Counts.PreExisting++
	case ClassFixed:
		cmp.Counts.Fixed++
	case ClassUnknown:
		cmp.Counts.Unknown++
	}
}

// setupReason explains a failed setup step on the change.
func setupReason(s CommandResult, base Run) Reason {
	where := "on the change"
	if _, bf := base.SetupFailed(); bf {
		where = "on the base commit and on the change"
	}
	why := fmt.Sprintf("setup step `%s` failed %s (%s)", s.Run, where, exitText(s))
	return Reason{Command: s.Run, Why: why, Next: SetupHint(s.Output)}
}

// unknownReason says why a command of the head could not be judged.
func unknownReason(bc *CommandResult, hc CommandResult, cc CommandComparison) (Reason, bool) {
	switch {
	case hc.Skipped && hc.SkipReason == SkipSetupFailed:
		return Reason{}, false // the setup reason covers it
	case hc.Skipped || hc.Error != "":
		return Reason{Command: hc.Name, Why: fmt.Sprintf("`%s` could not be run", hc.Run)}, true
	case hc.Missing:
		return Reason{Command: hc.Name, Why: fmt.Sprintf("`%s` could not be started in the sandbox (%s: a command it runs is not installed)", hc.Run, exitText(hc)),
			Next: "install what it needs in a `setup:` step, or name an `image:` that has it"}, true
	case hc.TimedOut && hc.Kind == SmokeCommand:
		return Reason{Command: hc.Name, Why: fmt.Sprintf("%s timed out after %s", hc.Name, hc.Duration.Round(time.Second)),
			Next: "raise `smoke.timeout` (the whole smoke stage) in .selfcode.yml"}, true
	case hc.TimedOut:
		return Reason{Command: hc.Name, Why: fmt.Sprintf("`%s` timed out after %s", hc.Run, hc.Duration.Round(time.Second)),
			Next: "give it a longer `timeout:` in `verify:` (or raise `limits.command_timeout`)"}, true
	case cc.Class == ClassUnknown && hc.Kind == SmokeCommand:
		return Reason{Command: hc.Name, Why: fmt.Sprintf("%s fails on the base commit as well, so the smoke stage cannot show whether this change broke the service", hc.Name),
			Next: "make the smoke stage pass on the default branch, or change `smoke:` in .selfcode.yml to what the service does"}, true
	case cc.Class == ClassUnknown:
		why := fmt.Sprintf("`%s` fails on the base commit as well and its output names no tests, so a new failure could hide behind the old one", hc.Run)
		if hc.Tests != nil && hc.Tests.Partial || bc != nil && bc.Tests != nil && bc.Tests.Partial {
			why = fmt.Sprintf("`%s` fails on the base commit as well and its output was too long to see every test", hc.Run)
			return Reason{Command: hc.Name, Why: why, Next: "raise `limits.output_bytes`, or list its JUnit XML files in `reports:`"}, true
		}
		return Reason{Command: hc.Name, Why: why,
			Next: "configure `verify:` with a command that names its tests (for example `go test -v ./...` or `pytest -rA`), or list its JUnit XML files in `reports:`"}, true
	}
	return Reason{}, false
}

func exitText(c CommandResult) string {
	switch {
	case c.TimedOut:
		return "timed out"
	case c.OutputStopped:
		return "stopped: too much output"
	case c.OOMKilled:
		return "out of memory"
	}
	return fmt.Sprintf("exit status %d", c.ExitCode)
}

func compareCommand(bc *CommandResult, hc CommandResult) CommandComparison {
	cc := CommandComparison{Name: hc.Name, regressionKeys: map[string]bool{}}
	if hc.Tests != nil {
		p, f, s := hc.Tests.Counts()
		cc.Head = &TestCounts{Pass: p, Fail: f, Skip: s}
	}
	baseKnown := bc != nil && bc.Error == "" && !bc.Skipped && !bc.Missing && !bc.TimedOut
	if baseKnown && bc.Tests != nil {
		p, f, s := bc.Tests.Counts()
		cc.Base = &TestCounts{Pass: p, Fail: f, Skip: s}
	}
	if hc.Skipped || hc.Error != "" || hc.Missing || hc.TimedOut {
		cc.Class = ClassUnknown
		return cc
	}
	if baseKnown && !bc.Passed && !hc.Passed && !(bc.TestsKnown() && hc.TestsKnown()) {
		// Failing on both sides with the tests unknown on one: a new failure
		// could hide behind the old one. Only a new compile error can
		// still be told apart.
		cc.Class = ClassUnknown
		hk, bk := failures(hc), failures(*bc)
		for _, k := range sortedKeys(hk) {
			if f := hk[k]; f.Kind == KindDiagnostic {
				if _, old := bk[k]; !old {
					cc.Regressions = append(cc.Regressions, f)
					cc.regressionKeys[k] = true
				}
			}
		}
		if len(cc.Regressions) > 0 {
			cc.Class = ClassRegression
		}
		return cc
	}
	flaky := map[testreport.ID]bool{}
	for _, id := range hc.Flaky {
		flaky[id] = true
	}
	hk := failures(hc)
	var bk map[string]Finding
	if baseKnown {
		bk = failures(*bc)
	}
	for _, k := range sortedKeys(hk) {
		f := hk[k]
		switch _, old := bk[k]; {
		case old:
			cc.PreExisting = append(cc.PreExisting, f)
		case f.Kind == KindTest && flaky[f.Test]:
			cc.Flaky = append(cc.Flaky, f)
		default:
			cc.Regressions = append(cc.Regressions, f)
			cc.regressionKeys[k] = true
		}
	}
	for _, k := range sortedKeys(bk) {
		if _, ok := hk[k]; ok {
			continue
		}
		f := bk[k]
		f.Command = hc.Name
		if f.Kind == KindTest && hc.Tests != nil {
			switch st, ran := hc.Tests.Tests[f.Test]; {
			case !ran:
				continue // reported with the missing tests below
			case st == testreport.Skip:
				cc.Notes = append(cc.Notes, fmt.Sprintf("test %s failed on the base and is skipped now", f.Test))
				continue
			}
		}
		if f.Kind == KindCommand && !hc.Passed {
			continue // the command still fails, for other reasons
		}
		cc.Fixed = append(cc.Fixed, f)
	}
	if baseKnown {
		cc.Notes = append(cc.Notes, testNotes(bc.Tests, hc.Tests)...)
	} else if bc != nil {
		cc.Notes = append(cc.Notes, "the base result is unavailable (the command could not be run there)")
	}
	switch {
	case len(cc.Regressions) > 0:
		cc.Class = ClassRegression
	case !hc.Passed && (len(cc.PreExisting) > 0 || len(cc.Flaky) == 0):
		cc.Class = ClassPreExisting
	case baseKnown && !bc.Passed:
		cc.Class = ClassFixed
	default:
		cc.Class = ClassPass
	}
	return cc
}

// testNotes lists tests that ran on the base but not the head, and tests
// that passed on the base and are skipped on the head.
func testNotes(base, head *testreport.Report) []string {
	if base == nil || head == nil || head.Partial {
		return nil
	}
	missing := map[string][]string{}
	var notes []string
	for id, st := range base.Tests {
		hst, ok := head.Tests[id]
		switch {
		case !ok:
			missing[id.Suite] = append(missing[id.Suite], id.Name)
		case st == testreport.Pass && hst == testreport.Skip:
			notes = append(notes, fmt.Sprintf("test %s passed on the base and is skipped now", id))
		}
	}
	slices.Sort(notes)
	for _, suite := range sortedKeys(missing) {
		tests := missing[suite]
		slices.Sort(tests)
		why := ""
		if head.IsBroken(suite) {
			why = " (it no longer builds or loads)"
		}
		if len(tests) > maxMissingListed {
			notes = append(notes, fmt.Sprintf("%d tests of %s ran on the base only%s", len(tests), suite, why))
			continue
		}
		notes = append(notes, fmt.Sprintf("ran on the base only%s: %s in %s", why, strings.Join(tests, ", "), suite))
	}
	return notes
}

// failures returns the failure set of a command, keyed for comparison.
func failures(c CommandResult) map[string]Finding {
	if c.Passed {
		return nil
	}
	set := map[string]Finding{}
	add := func(kind FindingKind, key, subject string, id testreport.ID) {
		set[string(kind)+"\x00"+key] = Finding{Command: c.Name, Kind: kind, Subject: subject, Test: id}
	}
	if c.Error != "" || c.Skipped {
		add(KindCommand, "not run", "could not be run", testreport.ID{})
		return set
	}
	for _, id := range c.Tests.Failures() {
		add(KindTest, id.Suite+"\x00"+id.Name, id.String(), id)
	}
	for _, s := range c.Tests.SuiteFailures() {
		subject := s + " failed"
		if c.Tests.IsBroken(s) {
			subject = s + " does not build or load"
		}
		add(KindPackage, s, subject, testreport.ID{})
	}
	for _, d := range c.Diagnostics {
		add(KindDiagnostic, d.key(), d.String(), testreport.ID{})
	}
	switch {
	case c.TimedOut:
		add(KindCommand, "timed out", "timed out", testreport.ID{})
	case c.OOMKilled:
		add(KindCommand, "oom", "ran out of memory", testreport.ID{})
	case c.OutputStopped:
		add(KindCommand, "output", "produced too much output and was stopped", testreport.ID{})
	case len(set) == 0:
		add(KindCommand, "failed", fmt.Sprintf("failed with exit status %d", c.ExitCode), testreport.ID{})
	}
	return set
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
