package testreport

import (
	"bytes"
	"encoding/json"
	"strings"
)

// workDir is the sandbox checkout; report paths are made relative to it so
// they read like the repository's own.
const workDir = "/work/"

func relPath(p string) string { return strings.TrimPrefix(p, workDir) }

// jestReport is the part of `jest --json` (and vitest's json reporter,
// which follows it) that names tests.
type jestReport struct {
	TestResults *[]struct {
		Name             string `json:"name"`
		Status           string `json:"status"`
		Message          string `json:"message"`
		AssertionResults []struct {
			AncestorTitles  []string `json:"ancestorTitles"`
			Title           string   `json:"title"`
			Status          string   `json:"status"`
			FailureMessages []string `json:"failureMessages"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

// mochaReport is `mocha --reporter json`.
type mochaReport struct {
	Stats *struct {
		Tests int `json:"tests"`
	} `json:"stats"`
	Tests    []mochaTest `json:"tests"`
	Passes   []mochaTest `json:"passes"`
	Failures []mochaTest `json:"failures"`
	Pending  []mochaTest `json:"pending"`
}

type mochaTest struct {
	FullTitle string `json:"fullTitle"`
	File      string `json:"file"`
	Err       struct {
		Message string `json:"message"`
		Stack   string `json:"stack"`
	} `json:"err"`
}

// ParseJestJSON reads `jest --json` (or vitest's json reporter) output.
// Suite is the test file (relative to the checkout), Name the describe
// titles and the test title joined by " › ", as jest prints them. A file
// that failed to run is a Broken suite with its message in Errors. nil
// when data is not such a report.
func ParseJestJSON(data []byte) *Report {
	var jr jestReport
	if !decodeJSONObject(data, &jr) || jr.TestResults == nil {
		return nil
	}
	rep := New(FormatJest)
	for _, f := range *jr.TestResults {
		suite := relPath(f.Name)
		if suite == "" {
			continue
		}
		if f.Status == "failed" && len(f.AssertionResults) == 0 {
			rep.Broken = append(rep.Broken, suite)
			rep.Suites[suite] = Fail
			for _, l := range strings.Split(f.Message, "\n") {
				rep.AddError(l)
			}
			continue
		}
		for _, a := range f.AssertionResults {
			name := strings.Join(append(append([]string(nil), a.AncestorTitles...), a.Title), " › ")
			if strings.TrimSpace(name) == "" {
				continue
			}
			id := ID{Suite: suite, Name: name}
			switch a.Status {
			case "passed":
				rep.Set(id, Pass)
			case "failed":
				rep.Set(id, Fail)
				for _, m := range a.FailureMessages {
					for _, l := range strings.Split(m, "\n") {
						rep.AddOutput(id, l)
					}
				}
			default: // pending, skipped, todo, disabled
				rep.Set(id, Skip)
			}
		}
		switch f.Status {
		case "passed":
			rep.Suites[suite] = Pass
		case "failed":
			rep.Suites[suite] = Fail
		}
	}
	if rep.Len() == 0 && len(rep.Broken) == 0 {
		return nil
	}
	return rep.finish()
}

// ParseMochaJSON reads `mocha --reporter json` output. Suite is the test
// file, Name the full title ("describe it"). nil when data is not such a
// report.
func ParseMochaJSON(data []byte) *Report {
	var mr mochaReport
	if !decodeJSONObject(data, &mr) || mr.Stats == nil {
		return nil
	}
	rep := New(FormatMocha)
	set := func(list []mochaTest, st Status) {
		for _, t := range list {
			if strings.TrimSpace(t.FullTitle) == "" {
				continue
			}
			id := ID{Suite: relPath(t.File), Name: t.FullTitle}
			rep.Set(id, st)
			if st == Fail {
				text := t.Err.Stack
				if text == "" {
					text = t.Err.Message
				}
				for _, l := range strings.Split(text, "\n") {
					rep.AddOutput(id, l)
				}
			}
		}
	}
	set(mr.Passes, Pass)
	set(mr.Pending, Skip)
	set(mr.Failures, Fail)
	if rep.Len() == 0 {
		return nil
	}
	return rep.finish()
}

// decodeJSONObject decodes the first JSON object in data into v: the
// whole of data, or, when a tool printed other lines around it, the first
// line that starts with "{" and what follows it.
func decodeJSONObject(data []byte, v any) bool {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, v) == nil {
		return true
	}
	for off := 0; off < len(data); {
		i := bytes.Index(data[off:], []byte("\n{"))
		start := off + i + 1
		if i < 0 {
			if off == 0 && bytes.HasPrefix(data, []byte("{")) {
				start = 0
			} else {
				return false
			}
		}
		dec := json.NewDecoder(bytes.NewReader(data[start:]))
		if dec.Decode(v) == nil {
			return true
		}
		if i < 0 {
			return false
		}
		off = start + 1
	}
	return false
}
