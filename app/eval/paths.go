package eval

import (
	"path"
	"strings"
)

// sourceExts are the languages selfcode verifies (Go, Python,
// JavaScript/TypeScript): a change to one of their files that is not a
// test is a source change.
var sourceExts = map[string]bool{
	".go": true, ".py": true,
	".js": true, ".jsx": true, ".mjs": true, ".cjs": true,
	".ts": true, ".tsx": true, ".mts": true, ".cts": true,
}

// testDirs hold tests and their fixtures whatever the files' names: Go's
// testdata, Python's and JavaScript's tests/test folders, Jest's
// __tests__ and __snapshots__.
var testDirs = map[string]bool{"testdata": true, "tests": true, "test": true, "__tests__": true, "__snapshots__": true}

// IsTestPath reports whether a repository path is a test file by the
// conventions of the languages selfcode verifies: Go `*_test.go` and
// anything under `testdata/`; Python `test_*.py`, `*_test.py` and
// `conftest.py`; JavaScript/TypeScript `*.test.*` and `*.spec.*`; and
// anything under a `tests/`, `test/`, `__tests__/` or `__snapshots__/`
// folder.
func IsTestPath(p string) bool {
	dir, base := path.Split(p)
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if testDirs[part] {
			return true
		}
	}
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	switch ext {
	case ".go":
		return strings.HasSuffix(base, "_test.go")
	case ".py":
		return strings.HasPrefix(base, "test_") || strings.HasSuffix(stem, "_test") || base == "conftest.py"
	}
	if sourceExts[ext] {
		return strings.Contains(base, ".test.") || strings.Contains(base, ".spec.")
	}
	return false
}

// IsSourcePath reports whether p is a source file of a language selfcode
// verifies and not a test.
func IsSourcePath(p string) bool {
	return sourceExts[path.Ext(p)] && !IsTestPath(p)
}
