package testreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Status is the outcome of a test or a suite.
type Status string

// Test and suite statuses.
const (
	Pass Status = "pass"
	Fail Status = "fail" // also: started but never finished (see Report.Incomplete)
	Skip Status = "skip" // for suites: no tests in it
)

// Format names the runner output a Report was read from.
type Format string

// Formats.
const (
	FormatGoJSON   Format = "go-json"  // go test -json
	FormatGoText   Format = "go-text"  // go test, go test -v (also through make or a script)
	FormatPytest   Format = "pytest"   // pytest -rA summary lines
	FormatUnittest Format = "unittest" // python -m unittest -v
	FormatJest     Format = "jest"     // jest --json
	FormatVitest   Format = "vitest"   // vitest --reporter=json
	FormatMocha    Format = "mocha"    // mocha --reporter json
	FormatSpec     Format = "mocha-spec"
	FormatTAP      Format = "tap" // node --test, tap, any TAP producer
	FormatJUnit    Format = "junit"
)

// Bounds on what a Report keeps.
const (
	MaxTestOutputLines = 60  // first lines kept per failing test
	MaxErrorLines      = 500 // lines kept in Errors
)

// ID names one test. Suite is what the runner groups tests by: a Go
// package's import path, a Python or JavaScript test file (or module and
// class), a JUnit testsuite or classname. Name is the test within it, with
// subtests and nested groups joined the way the runner prints them
// ("TestX/sub", "TestClass::test_y[1]", "describe › it").
type ID struct {
	Suite string `json:"suite"`
	Name  string `json:"name"`
}

// String returns "Name (Suite)", or Name alone when Suite is empty.
func (id ID) String() string {
	if id.Suite == "" {
		return id.Name
	}
	return id.Name + " (" + id.Suite + ")"
}

// IsAncestorOf reports whether id is a parent (at any depth) of other in
// Go's "Parent/child" subtest naming.
func (id ID) IsAncestorOf(other ID) bool {
	return id.Suite == other.Suite && strings.HasPrefix(other.Name, id.Name+"/")
}

// Compare orders IDs by suite, then name.
func Compare(a, b ID) int {
	if c := strings.Compare(a.Suite, b.Suite); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Report is what one run of a test runner reported, test by test.
type Report struct {
	// Format is the output the report was read from.
	Format Format
	// Suites maps each suite to its status, when the runner reports suites
	// (Go packages, JUnit testsuites, test files); may be empty.
	Suites map[string]Status
	// Tests maps every test (and subtest) to its status.
	Tests map[ID]Status
	// Output holds the first lines of each failing test's own output: its
	// assertion message and stack, without the runner's framing lines.
	Output map[ID][]string
	// Incomplete lists tests that started but never finished (the runner
	// timed out, crashed or was killed); they count as failed.
	Incomplete []ID
	// Broken lists suites that failed without running their tests: a Go
	// package that does not build, a Python module that does not import,
	// a JavaScript test file that does not load. Every test the suite had
	// on the base fails with it.
	Broken []string
	// Errors holds the runner's output that belongs to no test (compiler
	// and import errors, collection errors), at most MaxErrorLines lines.
	Errors []string
	// Partial is set when the input was cut short (the output cap): tests
	// absent from the report are unknown, not gone.
	Partial bool
}

// New returns an empty report of format f.
func New(f Format) *Report {
	return &Report{Format: f, Suites: map[string]Status{}, Tests: map[ID]Status{}, Output: map[ID][]string{}}
}

// Len is the number of tests in the report.
func (r *Report) Len() int {
	if r == nil {
		return 0
	}
	return len(r.Tests)
}

// Counts returns how many tests passed, failed and were skipped.
func (r *Report) Counts() (pass, fail, skip int) {
	if r == nil {
		return 0, 0, 0
	}
	for _, st := range r.Tests {
		switch st {
		case Pass:
			pass++
		case Fail:
			fail++
		case Skip:
			skip++
		}
	}
	return pass, fail, skip
}

// Ran reports whether at least one test passed or failed (skips do not
// count: a run that skipped everything tested nothing), or a suite passed
// with tests in it (plain go test prints "ok" for a package without
// naming its passing tests).
func (r *Report) Ran() bool {
	p, f, _ := r.Counts()
	if p+f > 0 {
		return true
	}
	for _, st := range r.Suites {
		if st == Pass {
			return true
		}
	}
	return false
}

// Failures returns the failing tests, most specific only: a parent whose
// failure is explained by a failing subtest is left out. Sorted.
func (r *Report) Failures() []ID {
	if r == nil {
		return nil
	}
	var failed []ID
	for id, st := range r.Tests {
		if st == Fail {
			failed = append(failed, id)
		}
	}
	slices.SortFunc(failed, Compare)
	// Sorted order puts a parent right before its subtests.
	out := failed[:0:0]
	for i, id := range failed {
		if i+1 < len(failed) && id.IsAncestorOf(failed[i+1]) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// SuiteFailures returns the failing suites with no failing test of their
// own: build failures, TestMain exits, import and collection errors. Sorted.
func (r *Report) SuiteFailures() []string {
	if r == nil {
		return nil
	}
	withTests := map[string]bool{}
	for id, st := range r.Tests {
		if st == Fail {
			withTests[id.Suite] = true
		}
	}
	var out []string
	for s, st := range r.Suites {
		if st == Fail && !withTests[s] {
			out = append(out, s)
		}
	}
	for _, s := range r.Broken {
		if !withTests[s] && r.Suites[s] != Fail {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// IsBroken reports whether suite could not run at all.
func (r *Report) IsBroken(suite string) bool {
	return r != nil && slices.Contains(r.Broken, suite)
}

// AddError keeps a line of output that belongs to no test, within bounds.
func (r *Report) AddError(line string) {
	if strings.TrimSpace(line) == "" || len(r.Errors) >= MaxErrorLines {
		return
	}
	r.Errors = append(r.Errors, line)
}

// AddOutput keeps a line of a test's output, within bounds.
func (r *Report) AddOutput(id ID, line string) {
	if len(r.Output[id]) < MaxTestOutputLines {
		r.Output[id] = append(r.Output[id], line)
	}
}

// Set records a test's status. A test reported more than once (a retried
// or duplicated name) keeps the worst status: fail over pass over skip.
func (r *Report) Set(id ID, st Status) {
	if old, ok := r.Tests[id]; ok && rank(old) >= rank(st) {
		return
	}
	r.Tests[id] = st
}

func rank(s Status) int {
	switch s {
	case Fail:
		return 3
	case Pass:
		return 2
	case Skip:
		return 1
	}
	return 0
}

// finish drops output kept for tests that did not fail and empty maps'
// noise, so reports compare and encode the same however they were built.
func (r *Report) finish() *Report {
	for id := range r.Output {
		if r.Tests[id] != Fail {
			delete(r.Output, id)
		}
	}
	slices.Sort(r.Broken)
	r.Broken = slices.Compact(r.Broken)
	slices.SortFunc(r.Incomplete, Compare)
	return r
}

// Merge combines reports of the same run (several report files, or a file
// and the printed output) into one; a test in several keeps its worst
// status. Nil reports are skipped; Merge of nothing is nil.
func Merge(reports ...*Report) *Report {
	var out *Report
	for _, r := range reports {
		if r == nil {
			continue
		}
		if out == nil {
			out = New(r.Format) // the first report names the format
		}
		for s, st := range r.Suites {
			if old, ok := out.Suites[s]; !ok || rank(st) > rank(old) {
				out.Suites[s] = st
			}
		}
		for id, st := range r.Tests {
			out.Set(id, st)
		}
		for id, lines := range r.Output {
			for _, l := range lines {
				out.AddOutput(id, l)
			}
		}
		out.Incomplete = append(out.Incomplete, r.Incomplete...)
		out.Broken = append(out.Broken, r.Broken...)
		for _, l := range r.Errors {
			out.AddError(l)
		}
		out.Partial = out.Partial || r.Partial
	}
	if out == nil {
		return nil
	}
	out.Incomplete = slices.CompactFunc(sortedIDs(out.Incomplete), func(a, b ID) bool { return a == b })
	return out.finish()
}

func sortedIDs(ids []ID) []ID {
	slices.SortFunc(ids, Compare)
	return ids
}

// wire is the JSON form of a Report: maps keyed by ID become lists.
type wire struct {
	Format     Format            `json:"format"`
	Suites     map[string]Status `json:"suites,omitempty"`
	Tests      []wireTest        `json:"tests"`
	Incomplete []ID              `json:"incomplete,omitempty"`
	Broken     []string          `json:"broken,omitempty"`
	Errors     []string          `json:"errors,omitempty"`
	Partial    bool              `json:"partial,omitempty"`
}

type wireTest struct {
	Suite  string   `json:"suite,omitempty"`
	Name   string   `json:"name"`
	Status Status   `json:"status"`
	Output []string `json:"output,omitempty"`
}

// MarshalJSON encodes the report with its tests as a sorted list.
func (r *Report) MarshalJSON() ([]byte, error) {
	w := wire{Format: r.Format, Suites: r.Suites, Incomplete: r.Incomplete, Broken: r.Broken, Errors: r.Errors, Partial: r.Partial}
	ids := slices.SortedFunc(maps.Keys(r.Tests), Compare)
	w.Tests = make([]wireTest, 0, len(ids))
	for _, id := range ids {
		w.Tests = append(w.Tests, wireTest{Suite: id.Suite, Name: id.Name, Status: r.Tests[id], Output: r.Output[id]})
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON produced.
func (r *Report) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode test report: %w", err)
	}
	*r = *New(w.Format)
	maps.Copy(r.Suites, w.Suites)
	for _, t := range w.Tests {
		id := ID{Suite: t.Suite, Name: t.Name}
		r.Tests[id] = t.Status
		if len(t.Output) > 0 {
			r.Output[id] = t.Output
		}
	}
	r.Incomplete, r.Broken, r.Errors, r.Partial = w.Incomplete, w.Broken, w.Errors, w.Partial
	return nil
}

// Parse recognises test results in output printed by a command: go test
// -json first (it is exact); otherwise every printed format (go test,
// pytest, unittest, TAP, jest and mocha JSON), merged, since one command
// (make test, a script) may run several runners. nil when the output
// names no tests.
func Parse(output string) *Report {
	return Merge(ParseEach(output)...)
}

// ParseEach is Parse without the merge: one report per format found.
func ParseEach(output string) []*Report {
	if r, _ := ParseGoJSON(output); r != nil {
		return []*Report{r}
	}
	data := []byte(output)
	var out []*Report
	for _, r := range []*Report{ParseGoText(output), ParsePytest(output), ParseUnittest(output), ParseTAP(output),
		ParseJestJSON(data), ParseMochaJSON(data), ParseMochaSpec(output)} {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// Covers reports whether report file r already holds what printed report
// p shows, named its own way (pytest's summary beside its JUnit XML, jest's
// printed JSON beside its output file): r could come from p's runner (a
// JUnit file from any, a JSON file from its own) and they share a test
// name, or p has no tests and both have broken suites. A printed report r does not cover
// (go test output beside pytest's JUnit file from the same make test)
// adds to it instead.
func (r *Report) Covers(p *Report) bool {
	if r == nil || p == nil {
		return false
	}
	// A JUnit file may come from any runner; a JSON file only from its own.
	if r.Format != FormatJUnit && r.Format != p.Format && !(r.Format == FormatMocha && p.Format == FormatSpec) {
		return false
	}
	names := map[string]bool{}
	for id := range r.Tests {
		names[id.Name] = true
		names[strings.ReplaceAll(id.Name, " › ", " ")] = true
	}
	for id := range p.Tests {
		if names[id.Name] || names[lastPart(id.Name)] {
			return true
		}
	}
	return p.Len() == 0 && len(p.Broken) > 0 && len(r.Broken) > 0
}

// lastPart is a pytest node name without its classes ("TestC::test_y" → "test_y").
func lastPart(name string) string {
	if i := strings.LastIndex(name, "::"); i >= 0 {
		return name[i+2:]
	}
	return name
}

// ParseFile reads a test report file by its content: JUnit XML, jest or
// vitest JSON, mocha JSON, or anything Parse reads.
func ParseFile(name string, data []byte) (*Report, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(trimmed, []byte("<")):
		r, err := ParseJUnit(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if r == nil {
			return nil, fmt.Errorf("%s: %w", name, ErrNoTests)
		}
		return r, nil
	case bytes.HasPrefix(trimmed, []byte("{")):
		if r := ParseJestJSON(data); r != nil {
			return r, nil
		}
		if r := ParseMochaJSON(data); r != nil {
			return r, nil
		}
	}
	if r := Parse(string(data)); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("%s: %w", name, ErrNotAReport)
}

// Errors of ParseFile.
var (
	ErrNotAReport = errors.New("not a test report selfcode can read (JUnit XML, jest, vitest or mocha JSON, go test, pytest, unittest or TAP output)")
	ErrNoTests    = errors.New("the report names no tests")
)
