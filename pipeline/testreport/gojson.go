package testreport

import (
	"encoding/json"
	"strings"
)

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
	id   ID
	text string
}

// ParseGoJSON parses `go test -json` output, tolerating lines that are
// not JSON events (build errors printed as text by Go before 1.24, go
// command messages, lines damaged by interleaving). It returns the report
// (nil when the output holds no test event) and a human-readable rendering
// like plain `go test` prints: failing tests' output, package result lines
// and the build output, in order. Suites are packages; a package that does
// not build is Broken and its compiler output is in Errors.
func ParseGoJSON(output string) (*Report, string) {
	rep := New(FormatGoJSON)
	events := 0
	started := map[ID]bool{}
	pkgStarted := map[string]bool{}
	var order []ID
	var pkgOrder []string
	buildFailed := map[string]bool{}
	var stream []streamLine

	addText := func(s string) {
		if strings.TrimSpace(s) == "" {
			return
		}
		stream = append(stream, streamLine{kind: lineText, text: s})
		rep.AddError(s)
	}

	for raw := range strings.SplitSeq(output, "\n") {
		line := strings.TrimRight(raw, "\r")
		var ev testEvent
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil || ev.Action == "" {
			addText(line)
			continue
		}
		events++
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
			id := ID{ev.Package, ev.Test}
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
					stream = append(stream, streamLine{kind: linePkg, id: ID{Suite: ev.Package}, text: l})
					if strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
						buildFailed[ev.Package] = true
					}
					continue
				}
				id := ID{ev.Package, ev.Test}
				stream = append(stream, streamLine{kind: lineTest, id: id, text: l})
				if !isFraming(l) {
					rep.AddOutput(id, l)
				}
			}
		case "pass", "fail", "skip":
			st := Status(ev.Action)
			if ev.Test != "" {
				id := ID{ev.Package, ev.Test}
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
			rep.Suites[ev.Package] = st
			if ev.FailedBuild != "" {
				buildFailed[ev.Package] = true
			}
		}
	}

	// Tests and packages that never finished count as failed.
	for _, id := range order {
		if _, done := rep.Tests[id]; !done {
			rep.Tests[id] = Fail
			rep.Incomplete = append(rep.Incomplete, id)
			rep.AddOutput(id, "(the test did not finish: the test binary timed out, crashed or was killed)")
			if _, ok := rep.Suites[id.Suite]; !ok || rep.Suites[id.Suite] == Pass {
				rep.Suites[id.Suite] = Fail
			}
		}
	}
	for _, p := range pkgOrder {
		if _, done := rep.Suites[p]; !done {
			rep.Suites[p] = Fail
		}
	}
	for p := range buildFailed {
		if p == "" {
			continue
		}
		rep.Broken = append(rep.Broken, p)
		if rep.Suites[p] != Fail {
			rep.Suites[p] = Fail
		}
	}
	if events == 0 {
		return nil, output
	}
	rep.finish()

	var b strings.Builder
	for _, l := range stream {
		switch l.kind {
		case lineTest:
			if rep.Tests[l.id] != Fail || isFraming(l.text) {
				continue
			}
		case linePkg:
			if l.text == "PASS" && rep.Suites[l.id.Suite] != Fail {
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
