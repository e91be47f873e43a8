package verify

import (
	"fmt"
	"strings"
	"testing"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func TestTrim(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short", "a\nb\n", 5, "a\nb\n"},
		{"exact", numbered(4), 4, numbered(4)},
		{"no limit", numbered(10), 0, numbered(10)},
		{"empty", "", 3, ""},
		{"head and tail", numbered(10), 4, "l1\nl2\n… 6 lines trimmed …\nl9\nl10\n"},
		{"odd limit favours head", numbered(10), 3, "l1\nl2\n… 7 lines trimmed …\nl10\n"},
		{"one line", numbered(10), 1, "l1\n… 9 lines trimmed …\n"},
		{"no final newline", "a\nb\nc\nd", 2, "a\n… 2 lines trimmed …\nd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Trim(tc.in, tc.max); got != tc.want {
				t.Errorf("Trim(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}
