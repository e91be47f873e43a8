package eval

import "testing"

func TestTestAndSourcePaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path         string
		test, source bool
	}{
		{"calc.go", false, true},
		{"calc_test.go", true, false},
		{"internal/x/testdata/golden.txt", true, false},
		{"internal/x/testdata/helper.go", true, false},
		{"contest.go", false, true},
		{"pkg/test_x.py", true, false},
		{"pkg/x_test.py", true, false},
		{"conftest.py", true, false},
		{"tests/fixtures/data.json", true, false},
		{"tests/helpers.py", true, false},
		{"pkg/latest.py", false, true},
		{"src/calc.test.ts", true, false},
		{"src/calc.spec.js", true, false},
		{"src/__tests__/calc.js", true, false},
		{"src/__snapshots__/calc.js.snap", true, false},
		{"test/calc.js", true, false},
		{"src/attest.ts", false, true},
		{"src/calc.tsx", false, true},
		{"README.md", false, false},
		{"go.mod", false, false},
		{"docs/testing.md", false, false},
		{"contest/readme.md", false, false},
	}
	for _, tt := range tests {
		if got := IsTestPath(tt.path); got != tt.test {
			t.Errorf("IsTestPath(%q) = %v, want %v", tt.path, got, tt.test)
		}
		if got := IsSourcePath(tt.path); got != tt.source {
			t.Errorf("IsSourcePath(%q) = %v, want %v", tt.path, got, tt.source)
		}
	}
}
