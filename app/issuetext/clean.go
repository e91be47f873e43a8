package issuetext

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Markers Clean leaves where it took something out or marks a block.
const (
	HiddenMarker        = "[hidden text removed]"
	CollapsedStart      = "[collapsed section, shown on GitHub only when expanded:]"
	CollapsedEnd        = "[end of collapsed section]"
	invisibleNoteFormat = "[%d invisible character(s) removed]"
)

var (
	// An HTML comment, or an unterminated one (GitHub hides the rest of
	// the text after it).
	htmlComment = regexp.MustCompile(`(?s)<!--.*?(?:-->|\z)`)
	// A link reference definition whose destination is # or <>: the
	// Markdown comment idioms `[//]: # (text)` and `[x]: <> (text)`,
	// which render as nothing.
	refComment = regexp.MustCompile(`(?m)^ {0,3}\[[^\]\n]+\]:[ \t]*(?:#|<>)(?:[ \t]+.*)?$`)
	// <details> opens a block GitHub shows collapsed.
	detailsOpen  = regexp.MustCompile(`(?i)<details(?:\s[^>]*)?>`)
	detailsClose = regexp.MustCompile(`(?i)</details\s*>`)
)

// Clean returns Markdown written on GitHub as its reader sees it, for the
// model:
//   - hidden text is removed, and HiddenMarker left in its place: HTML
//     comments (an unterminated one to the end, as GitHub renders it) and
//     the Markdown comment idioms (`[//]: # (…)`, `[x]: <> (…)`);
//   - invisible characters are removed, and a note at the end says how
//     many: format characters (zero-width spaces and joiners, bidi
//     controls, the tag characters U+E0000–E007F that can spell out
//     ASCII, soft hyphens, byte-order marks), variation selectors, and
//     control characters other than tab and newline;
//   - a <details> block, which GitHub shows collapsed, is kept between
//     CollapsedStart and CollapsedEnd, so its text reads as such.
//
// Text in code blocks is treated alike: a comment there is visible on
// GitHub, but removing it loses nothing an instruction needs.
func Clean(s string) string {
	// Invisible characters first: between the characters of "<!--" they
	// would hide a comment from the rules below.
	removed := 0
	s = strings.Map(func(r rune) rune {
		if invisible(r) {
			removed++
			return -1
		}
		return r
	}, s)
	s = htmlComment.ReplaceAllLiteralString(s, HiddenMarker)
	s = refComment.ReplaceAllLiteralString(s, HiddenMarker)
	s = detailsOpen.ReplaceAllLiteralString(s, CollapsedStart)
	s = detailsClose.ReplaceAllLiteralString(s, CollapsedEnd)
	if removed > 0 {
		s = strings.TrimRight(s, " \t\n") + "\n" + fmt.Sprintf(invisibleNoteFormat, removed)
	}
	return s
}

// invisible reports a character that shows nothing (or reorders what is
// shown) yet reaches the model.
func invisible(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Cc, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0: // Hangul fillers
		return true
	case r == 0x034F || r == 0x180B || r == 0x180C || r == 0x180D || r == 0x180F: // grapheme joiner, Mongolian selectors
		return true
	}
	return false
}
