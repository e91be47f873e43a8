package eval

import "testing"

// The base with the held-back tests applied is keyed by the commit and
// the held-back paths: another classification of the commit's test files
// (another set held back) is another tree, never a run of the old one;
// their order does not matter.
func TestWithTestsKey(t *testing.T) {
	t.Parallel()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	key := withTestsKey(commit, []string{"calc_test.go", "testdata/in.txt"})
	for _, tc := range []struct {
		name     string
		commit   string
		heldBack []string
		same     bool
	}{
		{"the same paths in another order", commit, []string{"testdata/in.txt", "calc_test.go"}, true},
		{"one path fewer", commit, []string{"calc_test.go"}, false},
		{"one path more", commit, []string{"calc_test.go", "testdata/in.txt", "sub_test.go"}, false},
		{"another commit", "76543210fedcba9876543210fedcba9876543210", []string{"calc_test.go", "testdata/in.txt"}, false},
	} {
		if got := withTestsKey(tc.commit, tc.heldBack); (got == key) != tc.same {
			t.Errorf("%s: key %s, the first %s; want the same: %v", tc.name, got, key, tc.same)
		}
	}
}
