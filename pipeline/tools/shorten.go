package tools

import (
	"fmt"
	"strings"

	"github.com/selfcode/selfcode/internal/utf8cut"
)

// Shorten fits output into max bytes by keeping its head and tail, cut at
// line boundaries where possible, with a note saying how much was left
// out. The pipeline uses it on old tool results to keep prompts within
// budget. Output of max bytes or fewer is returned unchanged.
func Shorten(output string, max int) string {
	if len(output) <= max {
		return output
	}
	if max <= 0 {
		return ""
	}
	note := func(n int) string { return fmt.Sprintf("\n… [%d bytes omitted] …\n", n) }
	room := max - len(note(len(output)))
	if room < 2 {
		return utf8cut.Cut(output, max)
	}
	headN := room * 2 / 3
	tailN := room - headN
	head := utf8cut.Cut(output, headN)
	if i := strings.LastIndexByte(head, '\n'); i > len(head)/2 {
		head = head[:i+1]
	}
	tail := output[len(output)-tailN:]
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 {
		tail = tail[1:]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	return head + note(len(output)-len(head)-len(tail)) + tail
}
