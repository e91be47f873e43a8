// Package utf8cut shortens text to a byte budget without splitting a UTF-8
// character; the model's tools and the verification reports share it.
package utf8cut

// Cut returns at most n bytes of s, ending before any rune it would split.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
