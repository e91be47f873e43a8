package templates

import (
	"fmt"
	"slices"
	"strings"
)

// trimLimit bounds one log: at most lines lines and chars bytes, keeping the
// head and the tail. drop removes the log, leaving a note.
type trimLimit struct {
	lines, chars int
	drop         bool
}

// trimLevels go from untouched to dropped; renderReport tries them in order.
var trimLevels = []trimLimit{
	{},
	{lines: 400, chars: 24000},
	{lines: 200, chars: 12000},
	{lines: 100, chars: 6000},
	{lines: 40, chars: 2400},
	{lines: 16, chars: 1000},
	{lines: 6, chars: 400},
	{drop: true},
}

// trimLog applies lim to s, keeping whole lines from the head and the tail
// (a single overlong line is cut in the middle) and saying how many lines
// were left out.
func trimLog(s string, lim trimLimit) string {
	if s == "" || lim == (trimLimit{}) {
		return s
	}
	body := strings.TrimRight(s, "\n")
	lines := strings.Split(body, "\n")
	if lim.drop {
		return fmt.Sprintf("… %d %s omitted to keep this under GitHub's size limit …", len(lines), plural(len(lines), "line", "lines"))
	}
	maxLines := lim.lines
	if maxLines <= 0 {
		maxLines = len(lines)
	}
	budget := lim.chars
	if budget <= 0 {
		budget = len(body) + 1
	}
	if len(lines) <= maxLines && len(body) <= budget {
		return s
	}
	if len(lines) == 1 {
		head, tail := cutValid(body, budget/2, false), cutValid(body, budget/2, true)
		return head + fmt.Sprintf(" … %d characters trimmed … ", len(body)-len(head)-len(tail)) + tail
	}
	headLines := max(maxLines/2, 1)
	var head []string
	used := 0
	for i := 0; i < len(lines) && len(head) < headLines; i++ {
		l := lines[i]
		if used+len(l)+1 > budget/2 {
			if len(head) == 0 {
				head = append(head, cutValid(l, budget/2, false)+"…")
			}
			break
		}
		head = append(head, l)
		used += len(l) + 1
	}
	var tail []string
	used = 0
	for i := len(lines) - 1; i >= len(head) && len(tail) < max(maxLines-headLines, 1); i-- {
		l := lines[i]
		if used+len(l)+1 > budget-budget/2 {
			if len(tail) == 0 {
				tail = append(tail, "…"+cutValid(l, budget-budget/2, true))
			}
			break
		}
		tail = append(tail, l)
		used += len(l) + 1
	}
	slices.Reverse(tail)
	cut := len(lines) - len(head) - len(tail)
	note := fmt.Sprintf("… %d %s trimmed …", cut, plural(cut, "line", "lines"))
	return strings.Join(head, "\n") + "\n" + note + "\n" + strings.Join(tail, "\n")
}

// cutValid returns about n bytes from the start (or end) of s without
// splitting a UTF-8 sequence.
func cutValid(s string, n int, fromEnd bool) string {
	if n >= len(s) {
		return s
	}
	if !fromEnd {
		for n > 0 && !isRuneStart(s[n]) {
			n--
		}
		return s[:n]
	}
	i := len(s) - n
	for i < len(s) && !isRuneStart(s[i]) {
		i++
	}
	return s[i:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// trimmed is a copy of rep with every log cut to trimLevels[level]. The
// summary, plan and tables are never touched.
func (rep Report) trimmed(level int) Report {
	if level == 0 {
		return rep
	}
	lim := trimLevels[level]
	rep.Logs = trimLog(rep.Logs, lim)
	rep.Diff = trimLog(rep.Diff, lim)
	rep.Error = trimLog(rep.Error, trimLimit{lines: max(lim.lines, 40), chars: max(lim.chars, 4000)})
	rep.Verification = trimRows(rep.Verification, lim)
	if len(rep.Iterations) > 0 {
		its := make([]Iteration, len(rep.Iterations))
		for i, it := range rep.Iterations {
			it.Verification = trimRows(it.Verification, lim)
			its[i] = it
		}
		rep.Iterations = its
	}
	return rep
}

func trimRows(rows []VerifyRow, lim trimLimit) []VerifyRow {
	if len(rows) == 0 {
		return rows
	}
	out := make([]VerifyRow, len(rows))
	for i, r := range rows {
		r.Output = trimLog(r.Output, lim)
		out[i] = r
	}
	return out
}
