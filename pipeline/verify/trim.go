package verify

import (
	"fmt"
	"strings"
)

// Trim keeps at most maxLines lines of output: the first half and the last
// half, with a "… N lines trimmed …" line between. maxLines <= 0 means no
// limit. A final newline is kept.
func Trim(output string, maxLines int) string {
	if maxLines <= 0 {
		return output
	}
	body, nl := strings.CutSuffix(output, "\n")
	lines := strings.Split(body, "\n")
	if len(lines) <= maxLines {
		return output
	}
	head := (maxLines + 1) / 2
	tail := maxLines - head
	var b strings.Builder
	for _, l := range lines[:head] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "… %d lines trimmed …", len(lines)-head-tail)
	for _, l := range lines[len(lines)-tail:] {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	if nl {
		b.WriteByte('\n')
	}
	return b.String()
}
