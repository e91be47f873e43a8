package testreport

import (
	"regexp"
	"strings"
)

var (
	tapResultRE  = regexp.MustCompile(`^(\s*)(not ok|ok)\b(?: \d+)?(?: -)?(?: (.*?))?(?:\s+#\s*(?i:(skip|todo))\b.*)?$`)
	tapSubtestRE = regexp.MustCompile(`^(\s*)# Subtest: (.*)$`)
	tapPlanRE    = regexp.MustCompile(`^\s*1\.\.\d+`)
)

// ParseTAP reads Test Anything Protocol output (node --test, tap, tape).
// Nested subtests (indented, introduced by "# Subtest:") are named
// "parent/child", so a parent that fails only because a child did is not
// counted twice. Suite is empty: TAP does not name files, and node names
// each file as the top-level test. A failing test's YAML diagnostics are
// its output. nil when the output is not TAP.
func ParseTAP(output string) *Report {
	lines := strings.Split(output, "\n")
	isTAP := false
	for _, l := range lines {
		if strings.HasPrefix(l, "TAP version ") || tapPlanRE.MatchString(l) {
			isTAP = true
			break
		}
	}
	if !isTAP {
		return nil
	}
	rep := New(FormatTAP)
	var names []string // subtest names by depth
	depthOf := func(indent string) int { return len(strings.ReplaceAll(indent, "\t", "    ")) / 4 }
	var last *ID
	inYAML := false
	yamlIndent := ""
	for _, raw := range lines {
		line := strings.TrimRight(raw, "\r")
		if inYAML {
			t := strings.TrimSpace(line)
			if t == "..." && strings.HasPrefix(line, yamlIndent) {
				inYAML = false
				continue
			}
			if last != nil && rep.Tests[*last] == Fail && !strings.HasPrefix(t, "duration_ms:") {
				rep.AddOutput(*last, strings.TrimPrefix(line, yamlIndent))
			}
			continue
		}
		if m := tapSubtestRE.FindStringSubmatch(line); m != nil {
			d := depthOf(m[1])
			names = append(names[:min(d, len(names))], relPath(strings.TrimSpace(m[2])))
			continue
		}
		if t := strings.TrimSpace(line); t == "---" && last != nil {
			inYAML = true
			yamlIndent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			continue
		} else if strings.HasPrefix(t, "Bail out!") {
			rep.AddError(t)
			continue
		}
		m := tapResultRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d := depthOf(m[1])
		name := relPath(strings.TrimSpace(m[3]))
		if name == "" {
			last = nil
			continue
		}
		parents := names[:min(d, len(names))]
		full := strings.Join(append(append([]string(nil), parents...), name), "/")
		id := ID{Name: full}
		switch {
		case m[4] != "":
			rep.Set(id, Skip)
		case m[2] == "ok":
			rep.Set(id, Pass)
		default:
			rep.Set(id, Fail)
		}
		last = &id
		if len(names) > d {
			names = names[:d]
		}
	}
	if rep.Len() == 0 {
		return nil
	}
	return rep.finish()
}
