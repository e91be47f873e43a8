package tools

import (
	"fmt"
	"sort"
	"strings"

	"github.com/selfcode/selfcode/internal/utf8cut"
)

// line is one line of a file: its text without the line ending, the ending
// itself ("\n", "\r\n" or "" for a last line without one) and its offset.
type line struct {
	text  string
	eol   string
	start int
}

func splitLines(s string) []line {
	var out []line
	for off := 0; off < len(s); {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			out = append(out, line{text: s[off:], start: off})
			break
		}
		text, eol := s[off:off+i], "\n"
		if strings.HasSuffix(text, "\r") {
			text, eol = text[:len(text)-1], "\r\n"
		}
		out = append(out, line{text: text, eol: eol, start: off})
		off += i + 1
	}
	return out
}

// eolStyle returns the file's dominant line ending.
func eolStyle(s string) string {
	crlf := strings.Count(s, "\r\n")
	if crlf > 0 && crlf*2 >= strings.Count(s, "\n") {
		return "\r\n"
	}
	return "\n"
}

// toLF normalises line endings to "\n".
func toLF(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// toStyle converts LF text to the given line ending.
func toStyle(lf, eol string) string {
	if eol == "\n" {
		return lf
	}
	return strings.ReplaceAll(lf, "\n", eol)
}

// lineOf returns the 1-based line number of byte offset off.
func lineOf(s string, off int) int { return strings.Count(s[:off], "\n") + 1 }

// indexAll returns every (possibly overlapping) offset of sub in s, up to
// limit of them.
func indexAll(s, sub string, limit int) []int {
	var out []int
	for off := 0; off <= len(s)-len(sub) && len(out) < limit; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			break
		}
		out = append(out, off+i)
		off += i + 1
	}
	return out
}

// replacement is the outcome of matching old_str in a file.
type replacement struct {
	content string // new file content when exactly one match was found
	lines   []int  // 1-based start lines of the matches
	fuzzy   bool   // matched only after ignoring trailing whitespace / line endings
}

// replaceOnce finds old in content (exactly, then line by line ignoring
// trailing whitespace and \r) and, when there is exactly one match,
// substitutes new written in the file's line-ending style.
func replaceOnce(content, old, new string) replacement {
	eol := eolStyle(content)
	newStyled := toStyle(toLF(new), eol)
	variants := []string{old}
	if v := toStyle(toLF(old), eol); v != old {
		variants = append(variants, v)
	}
	for _, v := range variants {
		offs := indexAll(content, v, 50)
		if len(offs) == 0 {
			continue
		}
		r := replacement{}
		for _, o := range offs {
			r.lines = append(r.lines, lineOf(content, o))
		}
		if len(offs) == 1 {
			r.content = content[:offs[0]] + newStyled + content[offs[0]+len(v):]
		}
		return r
	}
	// Line by line, trailing whitespace and \r ignored.
	lines := splitLines(content)
	want := strings.Split(strings.TrimSuffix(toLF(old), "\n"), "\n")
	for i := range want {
		want[i] = strings.TrimRight(want[i], " \t\r")
	}
	r := replacement{fuzzy: true}
	var at []int
	for i := 0; i+len(want) <= len(lines) && len(at) < 50; i++ {
		ok := true
		for j, w := range want {
			if strings.TrimRight(lines[i+j].text, " \t\r") != w {
				ok = false
				break
			}
		}
		if ok {
			at = append(at, i)
			r.lines = append(r.lines, i+1)
		}
	}
	if len(at) != 1 {
		return r
	}
	first, last := lines[at[0]], lines[at[0]+len(want)-1]
	end := last.start + len(last.text) + len(last.eol)
	repl := newStyled
	if repl != "" && last.eol != "" && !strings.HasSuffix(repl, "\n") {
		repl += eol
	}
	r.content = content[:first.start] + repl + content[end:]
	return r
}

// closest finds the window of len(old lines) file lines most similar to
// old, by average per-line bigram similarity. It returns the 0-based start
// line and the score in [0, 1].
func closest(content, old string) (start, size int, score float64) {
	lines := splitLines(content)
	want := strings.Split(strings.TrimSuffix(toLF(old), "\n"), "\n")
	if len(lines) == 0 {
		return 0, 0, 0
	}
	const maxLines, maxWant = 20000, 40
	if len(lines) > maxLines {
		lines = lines[:maxLines]
	}
	size = len(want)
	if size > len(lines) {
		size = len(lines)
	}
	scored := want
	if len(scored) > maxWant {
		scored = scored[:maxWant]
	}
	if len(scored) > size {
		scored = scored[:size]
	}
	wb := make([][]uint32, len(scored))
	for i, w := range scored {
		wb[i] = bigrams(w)
	}
	fb := make([][]uint32, len(lines))
	for i, l := range lines {
		fb[i] = bigrams(l.text)
	}
	best, bestAt := -1.0, 0
	for i := 0; i+len(scored) <= len(lines); i++ {
		sum := 0.0
		for j := range scored {
			sum += dice(fb[i+j], wb[j])
		}
		if avg := sum / float64(len(scored)); avg > best {
			best, bestAt = avg, i
		}
	}
	if best < 0 {
		best = 0
	}
	return bestAt, size, best
}

// bigrams returns the sorted byte bigrams of a line with surrounding
// whitespace removed; a one-byte line yields one pseudo-bigram.
func bigrams(s string) []uint32 {
	s = strings.TrimSpace(s)
	if len(s) == 1 {
		return []uint32{uint32(s[0])}
	}
	out := make([]uint32, 0, len(s))
	for i := 0; i+1 < len(s); i++ {
		out = append(out, uint32(s[i])<<8|uint32(s[i+1])|1<<16)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// dice is the Sørensen–Dice coefficient of two sorted bigram multisets;
// two empty lines are identical.
func dice(a, b []uint32) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}

// numbered renders lines [from, to) (0-based) of content with 1-based
// numbers, long lines shortened.
func numbered(lines []line, from, to int) string {
	if from < 0 {
		from = 0
	}
	if to > len(lines) {
		to = len(lines)
	}
	width := len(fmt.Sprint(to))
	var b strings.Builder
	for i := from; i < to; i++ {
		text := lines[i].text
		if len(text) > maxLineLen {
			text = utf8cut.Cut(text, maxLineLen) + " …[line shortened]"
		}
		fmt.Fprintf(&b, "%*d\t%s\n", width, i+1, text)
	}
	return b.String()
}

// maxLineLen is the longest line view and snippets show in full.
const maxLineLen = 2000

// changedRegion returns the 0-based line range [from, to) of after that
// differs from before.
func changedRegion(before, after []line) (from, to int) {
	p := 0
	for p < len(before) && p < len(after) && before[p].text == after[p].text && before[p].eol == after[p].eol {
		p++
	}
	s := 0
	for s < len(before)-p && s < len(after)-p && before[len(before)-1-s].text == after[len(after)-1-s].text && before[len(before)-1-s].eol == after[len(after)-1-s].eol {
		s++
	}
	return p, len(after) - s
}

// snippet shows the changed part of after with a few lines of context.
func snippet(before, after string) string {
	const context, maxShown = 3, 60
	bl, al := splitLines(before), splitLines(after)
	from, to := changedRegion(bl, al)
	if len(al) == 0 {
		return "(the file is now empty)\n"
	}
	lo, hi := max(from-context, 0), min(to+context, len(al))
	if hi-lo > maxShown {
		head := numbered(al, lo, lo+maxShown/2)
		tail := numbered(al, hi-maxShown/2, hi)
		return head + fmt.Sprintf("… (%d lines not shown)\n", (hi-maxShown/2)-(lo+maxShown/2)) + tail
	}
	return numbered(al, lo, hi)
}
