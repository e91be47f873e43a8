package testreport

import (
	"regexp"
	"strings"
)

var (
	// "    ✔ adds (3ms)"; Debian's mocha 10 prints "undefined" for the mark.
	specPassRE    = regexp.MustCompile(`^(\s+)(?:✔|✓|√|undefined) (.+?)(?: \(\d+ms\))?$`)
	specFailRE    = regexp.MustCompile(`^(\s+)(\d+)\) (.+)$`)
	specPendRE    = regexp.MustCompile(`^(\s+)- (.+)$`)
	specSummaryRE = regexp.MustCompile(`^\s+\d+ passing(?: \(.*\))?$`)
)

// ParseMochaSpec reads mocha's default (spec) reporter output. Tests are
// named by their describe titles and own title joined by spaces, as mocha's
// fullTitle does; spec output names no file, so Suite is empty. A failing
// test's output comes from the numbered failure list after the summary.
// nil when the output is not mocha spec output.
func ParseMochaSpec(output string) *Report {
	lines := strings.Split(output, "\n")
	summary := -1
	for i, l := range lines {
		if specSummaryRE.MatchString(strings.TrimRight(l, "\r")) {
			summary = i
			break
		}
	}
	if summary < 0 {
		return nil
	}
	rep := New(FormatSpec)
	type level struct {
		indent int
		title  string
	}
	var stack []level
	failed := map[string]ID{} // failure number → test
	name := func(indent int, title string) ID {
		var parts []string
		for _, l := range stack {
			if l.indent < indent {
				parts = append(parts, l.title)
			}
		}
		return ID{Name: strings.Join(append(parts, title), " ")}
	}
	for _, raw := range lines[:summary] {
		line := strings.TrimRight(raw, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		set := func(title string, st Status) (ID, bool) {
			if strings.TrimSpace(title) == "" {
				return ID{}, false
			}
			id := name(indent, strings.TrimSpace(title))
			rep.Set(id, st)
			return id, true
		}
		switch {
		case specFailRE.MatchString(line):
			m := specFailRE.FindStringSubmatch(line)
			if id, ok := set(m[3], Fail); ok {
				failed[m[2]] = id
			}
		case specPassRE.MatchString(line):
			set(specPassRE.FindStringSubmatch(line)[2], Pass)
		case specPendRE.MatchString(line):
			set(specPendRE.FindStringSubmatch(line)[2], Skip)
		case indent > 0:
			stack = append(stack, level{indent, strings.TrimSpace(line)})
		}
	}
	if rep.Len() == 0 {
		return nil
	}
	// "  1) add\n       adds:\n     AssertionError …" until the next number.
	var cur *ID
	for _, raw := range lines[summary+1:] {
		line := strings.TrimRight(raw, "\r")
		if m := specFailRE.FindStringSubmatch(line); m != nil && len(m[1]) <= 2 {
			if id, ok := failed[m[2]]; ok {
				cur = &id
				continue
			}
		}
		if cur != nil && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "at ") {
			rep.AddOutput(*cur, strings.TrimSpace(line))
		}
	}
	return rep.finish()
}
