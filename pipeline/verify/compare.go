package verify

import (
	"github.com/selfcode/selfcode/pipeline/testreport"

	"fmt"
	"slices"
	"strings"
)

// Class is how a command or finding on the head compares with the base.
type Class string

// Classes.
const (
	ClassPass        Class = "pass"        // passes (and did on the base, or the base did not run it)
	ClassRegression  Class = "regression"  // fails on the head but not on the base
	ClassPreExisting Class = "preexisting" // fails the same way on the base
	ClassFixed       Class = "fixed"       // failed on the base, passes on the head
)

// FindingKind says what a Finding is about.
type FindingKind string

// Finding kinds.
const (
	KindTest       FindingKind = "test"       // a failing test
	KindPackage    FindingKind = "package"    // a package failing with no failing test (build failure, TestMain, init panic)
	KindDiagnostic FindingKind = "diagnostic" // a compiler or vet error
	KindCommand    FindingKind = "command"    // the command failed with nothing more specific to blame
)

// Finding is one failure, or one fixed failure, of one command.
type Finding struct {
	Command string      `json:"command"`
	Kind    FindingKind `json:"kind"`
	// Subject is the test ("pkg.Test"), the package, the diagnostic
	// ("file:line: message") or the command's failure ("timed out").
	Subject string        `json:"subject"`
	Test    testreport.ID `json:"test,omitzero"` // KindTest only
}

// String describes the finding for a person or a model.
func (f Finding) String() string {
	switch f.Kind {
	case KindTest:
		return fmt.Sprintf("%s: test %s (%s)", f.Command, f.Test.Name, f.Test.Suite)
	case KindPackage:
		return fmt.Sprintf("%s: package %s", f.Command, f.Subject)
	case KindDiagnostic:
		return fmt.Sprintf("%s: %s", f.Command, f.Subject)
	default:
		return fmt.Sprintf("%s: command %s", f.Command, f.Subject)
	}
}

// CommandComparison compares one command of the head run with the base.
type CommandComparison struct {
	Name        string    `json:"name"`
	Class       Class     `json:"class"`
	Regressions []Finding `json:"regressions,omitempty"`
	PreExisting []Finding `json:"preexisting,omitempty"`
	Fixed       []Finding `json:"fixed,omitempty"`
	// Notes mention tests that ran on the base only, or became skipped.
	Notes []string `json:"notes,omitempty"`
	// regressionKeys are the keys of Regressions, for Summarize.
	regressionKeys map[string]bool
}

// Counts classifies the head's commands, for metrics.
type Counts struct {
	Pass        int `json:"pass"`
	Regression  int `json:"regression"`
	PreExisting int `json:"preexisting"`
	Fixed       int `json:"fixed"`
}

// Comparison is the head run judged against the base run.
type Comparison struct {
	// Verified: every command passes, or the only failures left already
	// failed on the base. A head run with no commands is not verified.
	Verified bool                `json:"verified"`
	Commands []CommandComparison `json:"commands"`
	// Human-readable lists across all commands ("test: test TestX (pkg)").
	Regressions []string `json:"regressions,omitempty"`
	PreExisting []string `json:"preexisting,omitempty"` // for the report: "these also fail on the base"
	Fixed       []string `json:"fixed,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	Counts      Counts   `json:"counts"`
}

// maxMissingListed bounds the tests listed by name per package in notes.
const maxMissingListed = 10

// Compare judges head against base, command by command (matched by name)
// and, for go test, test by test. Failures are compared as sets: a failing
// test, a package failing without a failing test, a compiler or vet error
// (file and message, not line numbers, which shift with edits), or, when
// nothing more specific is known, the command itself (exit status, timeout,
// OOM, output cap). A failure on the head that is not in the base's set is
// a regression — this includes a new test that fails and a compile error
// the base did not have. A base command that could not be run contributes
// no failures, so everything failing on the head counts against it.
func Compare(base, head Run) Comparison {
	cmp := Comparison{Commands: make([]CommandComparison, 0, len(head.Commands))}
	used := make([]bool, len(base.Commands))
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
		for _, n := range cc.Notes {
			cmp.Notes = append(cmp.Notes, hc.Name+": "+n)
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
		}
	}
	for i, bc := range base.Commands {
		if !used[i] {
			cmp.Notes = append(cmp.Notes, fmt.Sprintf("%s: ran on the base only", bc.Name))
		}
	}
	cmp.Verified = len(head.Commands) > 0 && len(cmp.Regressions) == 0
	return cmp
}

func compareCommand(bc *CommandResult, hc CommandResult) CommandComparison {
	cc := CommandComparison{Name: hc.Name, regressionKeys: map[string]bool{}}
	baseKnown := bc != nil && bc.Error == "" && !bc.Skipped
	hk := failures(hc)
	var bk map[string]Finding
	if baseKnown {
		bk = failures(*bc)
	}
	for _, k := range sortedKeys(hk) {
		if _, ok := bk[k]; ok {
			cc.PreExisting = append(cc.PreExisting, hk[k])
		} else {
			cc.Regressions = append(cc.Regressions, hk[k])
			cc.regressionKeys[k] = true
		}
	}
	for _, k := range sortedKeys(bk) {
		if _, ok := hk[k]; ok {
			continue
		}
		f := bk[k]
		f.Command = hc.Name
		if f.Kind == KindTest && !hc.Passed && hc.Tests != nil {
			switch st, ran := hc.Tests.Tests[f.Test]; {
			case !ran:
				continue // reported with the missing tests below
			case st == testreport.Skip:
				cc.Notes = append(cc.Notes, fmt.Sprintf("test %s failed on the base and is skipped now", f.Test))
				continue
			}
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
	case !hc.Passed:
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
	if base == nil || head == nil {
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
	for _, pkg := range sortedKeys(missing) {
		tests := missing[pkg]
		slices.Sort(tests)
		why := ""
		if head.IsBroken(pkg) {
			why = " (the package did not build)"
		}
		if len(tests) > maxMissingListed {
			notes = append(notes, fmt.Sprintf("%d tests of %s ran on the base only%s", len(tests), pkg, why))
			continue
		}
		notes = append(notes, fmt.Sprintf("ran on the base only%s: %s in %s", why, strings.Join(tests, ", "), pkg))
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
		add(KindTest, id.Suite+" "+id.Name, id.String(), id)
	}
	for _, p := range c.Tests.SuiteFailures() {
		add(KindPackage, p, p, testreport.ID{})
	}
	for _, d := range c.Diagnostics {
		add(KindDiagnostic, d.key(), d.String(), testreport.ID{})
	}
	switch {
	case c.TimedOut:
		add(KindCommand, "timed out", "timed out", testreport.ID{})
	case c.OOMKilled:
		add(KindCommand, "oom", "ran out of memory", testreport.ID{})
	case c.Truncated:
		add(KindCommand, "truncated", "produced too much output and was stopped", testreport.ID{})
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
