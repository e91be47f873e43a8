package templates

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/selfcode/selfcode/pipeline/stage"
)

// funcs are the helpers every template may call. The ones taking untrusted
// text (text, cell, code, fence) make sure it stays inside its place: no
// table breakout, no code-fence breakout, no fake job markers, no pings.
func funcs() template.FuncMap {
	return template.FuncMap{
		"text":       inlineText,
		"html":       template.HTMLEscapeString,
		"cellcode":   func(s string) string { return strings.ReplaceAll(codeSpan(s), "|", `\|`) },
		"login":      login,
		"cell":       tableCell,
		"code":       codeSpan,
		"fence":      fence,
		"marker":     markerFunc,
		"dur":        formatDuration,
		"partName":   partName,
		"num":        formatNumber,
		"icon":       statusIcon,
		"check":      checkbox,
		"plural":     plural,
		"quote":      blockquote,
		"add":        func(a, b int) int { return a + b },
		"verified":   allPassed,
		"failed":     failedRows,
		"lastStage":  lastStage,
		"phaseNames": phaseNames,
		"result":     rowResult,
		"tests":      testCounts,
		"usd":        formatDollars,
	}
}

// formatDollars shows a cost: cents, or four decimals below a cent.
func formatDollars(d float64) string {
	if d != 0 && d < 0.01 {
		return fmt.Sprintf("$%.4f", d)
	}
	return fmt.Sprintf("$%.2f", d)
}

var mentionRE = regexp.MustCompile(`(^|[^\w@/])@([A-Za-z0-9][A-Za-z0-9-]*)`)

// defuse neutralises text that would act on GitHub when echoed by selfcode:
// a copy of the job marker (which would confuse finding the progress
// comment) and @mentions (which would notify people on the model's behalf).
func defuse(s string) string {
	s = strings.ReplaceAll(s, "selfcode:job:", "selfcode:\u200bjob:")
	return mentionRE.ReplaceAllString(s, "$1@\u200b$2")
}

var blockTagRE = regexp.MustCompile(`(?i)<(/?)(details|summary)`)

// inlineText is untrusted text shown as Markdown: it may format, but it
// cannot open an HTML comment or close the <details> block it sits in.
func inlineText(s string) string {
	s = defuse(s)
	s = strings.ReplaceAll(s, "<!--", "&lt;!--")
	s = blockTagRE.ReplaceAllString(s, "&lt;$1$2")
	return strings.TrimSpace(s)
}

var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$`)

// login is "@name" for a valid GitHub login, else "".
func login(name string) string {
	if !loginRE.MatchString(name) {
		return ""
	}
	return "@" + name
}

// tableCell is untrusted text on one table row.
func tableCell(s string) string {
	s = inlineText(s)
	s = strings.ReplaceAll(s, "\r\n", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if s == "" {
		return " "
	}
	return s
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			if cur > best {
				best = cur
			}
		} else {
			cur = 0
		}
	}
	return best
}

// codeSpan renders s as inline code with a backtick run longer than any in s.
func codeSpan(s string) string {
	s = defuse(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", " "), "\n", " "))
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		pad = " "
	}
	return ticks + pad + s + pad + ticks
}

// fence renders s as a fenced code block whose fence is longer than any
// backtick run inside, so the content cannot close it. info is the language.
func fence(info, s string) string {
	s = defuse(strings.TrimRight(s, "\n"))
	n := longestRun(s, '`') + 1
	if n < 3 {
		n = 3
	}
	f := strings.Repeat("`", n)
	return f + info + "\n" + s + "\n" + f
}

// blockquote prefixes every line of untrusted text with "> ".
func blockquote(s string) string {
	s = inlineText(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight("> "+l, " ")
	}
	return strings.Join(lines, "\n")
}

var jobIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Marker is the hidden line that identifies a job's progress comment
// (contract section 5).
func Marker(jobID string) (string, error) { return marker("job", jobID) }

// ReportMarker is the hidden marker of a job's report comment (on a pull
// request whose description is not selfcode's).
func ReportMarker(jobID string) (string, error) { return marker("report", jobID) }

func marker(kind, jobID string) (string, error) {
	if !jobIDRE.MatchString(jobID) {
		return "", fmt.Errorf("job id %q cannot be put in a marker", jobID)
	}
	return "<!-- selfcode:" + kind + ":" + jobID + " -->", nil
}

func markerFunc(jobID string) (string, error) { return Marker(jobID) }

// formatDuration is a short human duration: 850ms, 12s, 3m05s, 1h02m.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// partName is how a report names a part of a job's time: "sandbox start".
func partName(p stage.Part) string { return strings.ReplaceAll(string(p), "_", " ") }

// formatNumber writes n with thousands separators: 123,456.
func formatNumber(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func statusIcon(status string) string {
	switch status {
	case "pass", "passed", "succeeded":
		return "✅"
	case "fail", "failed":
		return "❌"
	case "running":
		return "⏳"
	case "skipped", "canceled", "superseded":
		return "⏭️"
	}
	return "⬜"
}

func checkbox(status string) string {
	if status == "pass" || status == "skipped" {
		return "[x]"
	}
	return "[ ]"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func allPassed(rows []VerifyRow) bool {
	for _, r := range rows {
		if !r.Passed {
			return false
		}
	}
	return len(rows) > 0
}

func failedRows(rows []VerifyRow) []VerifyRow {
	var out []VerifyRow
	for _, r := range rows {
		if !r.Passed {
			out = append(out, r)
		}
	}
	return out
}

// lastStage is the stage that failed, or else the last one that started.
func lastStage(stages []Stage) *Stage {
	for i := range stages {
		if stages[i].Status == stage.Fail {
			return &stages[i]
		}
	}
	for i := len(stages) - 1; i >= 0; i-- {
		if stages[i].Status != "pending" && stages[i].Status != "" {
			return &stages[i]
		}
	}
	return nil
}

// phaseNames are the keys of a token breakdown in a stable order.
func phaseNames(m map[string]int) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// rowResult is a verification row's result cell.
func rowResult(r VerifyRow) string {
	switch r.Status {
	case "could not run":
		return "⚠️ could not run"
	case "not run":
		return "⏭️ not run"
	case "failed":
		return "❌ fail"
	case "passed":
		return "✅ pass"
	}
	if r.Passed {
		return "✅ pass"
	}
	return "❌ fail"
}

// testCounts is "3 passed, 1 failed → 4 passed" for a row's tests, or "—".
func testCounts(base, head *TestCount) string {
	one := func(c *TestCount) string {
		if c == nil {
			return "—"
		}
		parts := []string{fmt.Sprintf("%d passed", c.Pass)}
		if c.Fail > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", c.Fail))
		}
		if c.Skip > 0 {
			parts = append(parts, fmt.Sprintf("%d skipped", c.Skip))
		}
		return strings.Join(parts, ", ")
	}
	if base == nil && head == nil {
		return "—"
	}
	return one(base) + " → " + one(head)
}
