package shortlist

import (
	"slices"
	"testing"
)

func TestAbbreviate(t *testing.T) {
	t.Parallel()
	list := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{5, []string{"a", "b", "c", "d"}},
		{4, []string{"a", "b", "c", "d"}},
		{2, []string{"a", "b", "and 2 more"}},
		{0, []string{"and 4 more"}},
		{-1, []string{"and 4 more"}},
	} {
		if got := Abbreviate(list, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("Abbreviate(%q, %d) = %q, want %q", list, tc.n, got, tc.want)
		}
	}
	if Abbreviate(list[:2:4], 1); list[1] != "b" {
		t.Errorf("the list was changed: %q", list)
	}
	if got := Abbreviate(nil, 3); got != nil {
		t.Errorf("Abbreviate(nil) = %q", got)
	}
}
