package verify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Status is the outcome of a test or a package.
type Status string

// Test and package statuses.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail" // also: started but never finished (see TestReport.Incomplete)
	StatusSkip Status = "skip" // for packages: no test files
)

// Bounds on what a TestReport keeps.
const (
	maxTestOutputLines = 60  // first lines kept per failing test
	maxBuildLines      = 500 // lines kept in BuildErrors
)

// TestID names one test (or subtest) of one package.
type TestID struct {
	Package string `json:"package"`
	Test    string `json:"test"`
}

// String returns "pkg.Test".
func (id TestID) String() string { return id.Package + "." + id.Test }

// MarshalText encodes the ID as "pkg Test"; import paths hold no spaces,
// so the first space separates the parts.
func (id TestID) MarshalText() ([]byte, error) {
	return []byte(id.Package + " " + id.Test), nil
}

// UnmarshalText decodes what MarshalText produced.
func (id *TestID) UnmarshalText(b []byte) error {
	p, t, ok := strings.Cut(string(b), " ")
	if !ok {
		return fmt.Errorf("decode test id %q: no space between package and test", b)
	}
	id.Package, id.Test = p, t
	return nil
}

// isAncestorOf reports whether id is a parent (at any depth) of other.
func (id TestID) isAncestorOf(other TestID) bool {
	return id.Package == other.Package && strings.HasPrefix(other.Test, id.Test+"/")
}

// TestReport is what a `go test -json` run reported.
type TestReport struct {
	// Packages maps each package to its status.
	Packages map[string]Status `json:"packages"`
	// Tests maps every test and subtest to its status.
	Tests map[TestID]Status `json:"tests"`
	// Output holds the first lines of each failing test's own output,
	// without the "=== RUN"-style framing lines.
	Output map[TestID][]string `json:"output,omitempty"`
	// Incomplete lists tests that started but never finished (the binary
	// timed out, crashed or was killed); they count as failed.
	Incomplete []TestID `json:"incomplete,omitempty"`
	// BuildFailed lists packages whose test binary did not build.
	BuildFailed []string `json:"build_failed,omitempty"`
	// BuildErrors holds the go command's own output (compiler and vet
	// errors, go.mod problems) and any other line that was not a test event.
	BuildErrors []string `json:"build_errors,omitempty"`
	// Events counts the JSON test events parsed.
	Events int `json:"events"`
}

// Failures returns the failing tests, most specific only: a parent whose
// failure is explained by a failing subtest is left out. Sorted.
func (r *TestReport) Failures() []TestID {
	if r == nil {
		return nil
	}
	var failed []TestID
	for id, st := range r.Tests {
		if st == StatusFail {
			failed = append(failed, id)
		}
	}
	sortIDs(failed)
	// Sorted order puts a parent right before its subtests.
	out := failed[:0:0]
	for i, id := range failed {
		if i+1 < len(failed) && id.isAncestorOf(failed[i+1]) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// PackageFailures returns the failing packages with no failing test of
// their own: build failures, TestMain exits, init panics. Sorted.
func (r *TestReport) PackageFailures() []string {
	if r == nil {
		return nil
	}
	withTests := map[string]bool{}
	for id, st := range r.Tests {
		if st == StatusFail {
			withTests[id.Package] = true
		}
	}
	var out []string
	for p, st := range r.Packages {
		if st == StatusFail && !withTests[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func sortIDs(ids []TestID) {
	slices.SortFunc(ids, func(a, b TestID) int {
		if c := strings.Compare(a.Package, b.Package); c != 0 {
			return c
		}
		return strings.Compare(a.Test, b.Test)
	})
}

// testEvent is one line of `go test -json` (cmd/test2json) output.
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
}

type lineKind int

const (
	lineText lineKind = iota // not a test event, or build output
	linePkg                  // package-level output
	lineTest                 // a test's output
)

type streamLine struct {
	kind lineKind
	id   TestID
	text string
}

// ParseTestJSON parses `go test -json` output, tolerating lines that are
// not JSON events (build errors printed as text by Go before 1.24, go
// command messages, lines damaged by interleaving). It returns the report
// and a human-readable rendering like plain `go test` prints: failing
// tests' output, package result lines and the build output, in order.
func ParseTestJSON(output string) (*TestReport, string) {
	rep := &TestReport{
		Packages: map[string]Status{},
		Tests:    map[TestID]Status{},
		Output:   map[TestID][]string{},
	}
	started := map[TestID]bool{}
	pkgStarted := map[string]bool{}
	var order []TestID
	var pkgOrder []string
	buildFailed := map[string]bool{}
	var stream []streamLine

	addText := func(s string) {
		if strings.TrimSpace(s) == "" {
			return
		}
		stream = append(stream, streamLine{kind: lineText, text: s})
		if len(rep.BuildErrors) < maxBuildLines {
			rep.BuildErrors = append(rep.BuildErrors, s)
		}
	}

	for raw := range strings.SplitSeq(output, "\n") {
		line := strings.TrimRight(raw, "\r")
		var ev testEvent
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil || ev.Action == "" {
			addText(line)
			continue
		}
		rep.Events++
		switch ev.Action {
		case "build-output":
			for l := range strings.SplitSeq(strings.TrimSuffix(ev.Output, "\n"), "\n") {
				addText(l)
			}
		case "build-fail":
			// The package's own "fail" event carries FailedBuild; the
			// ImportPath here may name an external _test package.
		case "start":
			if !pkgStarted[ev.Package] {
				pkgStarted[ev.Package] = true
				pkgOrder = append(pkgOrder, ev.Package)
			}
		case "run":
			id := TestID{ev.Package, ev.Test}
			if ev.Test != "" && !started[id] {
				started[id] = true
				order = append(order, id)
			}
		case "output", "bench":
			if ev.Output == "" {
				continue
			}
			for l := range strings.SplitSeq(strings.TrimSuffix(ev.Output, "\n"), "\n") {
				l = strings.TrimRight(l, "\r")
				if ev.Test == "" {
					stream = append(stream, streamLine{kind: linePkg, id: TestID{Package: ev.Package}, text: l})
					if strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
						buildFailed[ev.Package] = true
					}
					continue
				}
				id := TestID{ev.Package, ev.Test}
				stream = append(stream, streamLine{kind: lineTest, id: id, text: l})
				if !isFraming(l) && len(rep.Output[id]) < maxTestOutputLines {
					rep.Output[id] = append(rep.Output[id], l)
				}
			}
		case "pass", "fail", "skip":
			st := Status(ev.Action)
			if ev.Test != "" {
				id := TestID{ev.Package, ev.Test}
				if !started[id] {
					started[id] = true
					order = append(order, id)
				}
				rep.Tests[id] = st
				continue
			}
			if ev.Package == "" {
				continue
			}
			if !pkgStarted[ev.Package] {
				pkgStarted[ev.Package] = true
				pkgOrder = append(pkgOrder, ev.Package)
			}
			rep.Packages[ev.Package] = st
			if ev.FailedBuild != "" {
				buildFailed[ev.Package] = true
			}
		}
	}

	// Tests and packages that never finished count as failed.
	for _, id := range order {
		if _, done := rep.Tests[id]; !done {
			rep.Tests[id] = StatusFail
			rep.Incomplete = append(rep.Incomplete, id)
			if len(rep.Output[id]) < maxTestOutputLines {
				rep.Output[id] = append(rep.Output[id], "(the test did not finish: the test binary timed out, crashed or was killed)")
			}
			if _, ok := rep.Packages[id.Package]; !ok || rep.Packages[id.Package] == StatusPass {
				rep.Packages[id.Package] = StatusFail
			}
		}
	}
	for _, p := range pkgOrder {
		if _, done := rep.Packages[p]; !done {
			rep.Packages[p] = StatusFail
		}
	}
	for p := range buildFailed {
		if p == "" {
			continue
		}
		rep.BuildFailed = append(rep.BuildFailed, p)
		if rep.Packages[p] != StatusFail {
			rep.Packages[p] = StatusFail
		}
	}
	slices.Sort(rep.BuildFailed)
	for id := range rep.Output {
		if rep.Tests[id] != StatusFail {
			delete(rep.Output, id)
		}
	}
	if len(rep.Output) == 0 {
		rep.Output = nil
	}

	var b strings.Builder
	for _, l := range stream {
		switch l.kind {
		case lineTest:
			if rep.Tests[l.id] != StatusFail || isFraming(l.text) {
				continue
			}
		case linePkg:
			if l.text == "PASS" && rep.Packages[l.id.Package] != StatusFail {
				continue
			}
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return rep, b.String()
}

// isFraming reports lines test2json adds to mark test progress.
func isFraming(l string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
