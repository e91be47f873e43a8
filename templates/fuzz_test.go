package templates

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// FuzzFence checks that no content can close the fence that wraps it.
func FuzzFence(f *testing.F) {
	for _, s := range []string{"", "```", "a\n```\nb", "````x````", "`", "\n\n```\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := fence("text", s)
		lines := strings.Split(out, "\n")
		opening := strings.TrimSuffix(lines[0], "text")
		for _, l := range lines[1 : len(lines)-1] {
			trimmed := strings.TrimLeft(l, " ")
			if strings.HasPrefix(trimmed, opening) && strings.Trim(trimmed, "` \t") == "" {
				t.Fatalf("inner line %q closes fence %q", l, opening)
			}
		}
		if lines[len(lines)-1] != opening {
			t.Fatalf("last line %q is not the closing fence %q", lines[len(lines)-1], opening)
		}
	})
}

// FuzzTrimLog checks that trimming keeps valid UTF-8 and bounds the size.
func FuzzTrimLog(f *testing.F) {
	f.Add("a\nb\nc\n", 2, 10)
	f.Add(strings.Repeat("é", 100), 1, 7)
	f.Fuzz(func(t *testing.T, s string, lines, chars int) {
		if !utf8.ValidString(s) || lines < 0 || chars < 0 || lines > 1000 || chars > 100000 {
			return
		}
		out := trimLog(s, trimLimit{lines: lines, chars: chars})
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 from %q", s)
		}
		if chars > 0 && len(out) > chars+64 {
			t.Fatalf("kept %d bytes with limit %d", len(out), chars)
		}
	})
}
