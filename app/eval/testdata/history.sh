#!/bin/sh
# Builds a small repository selfcode eval's tests score, with a real
# history, into the directory given (created; must not exist or be empty):
# the Go one (calc), or with "python" or "jest" a Python (pytest) or
# JavaScript (Jest) one of two commits, with setup and verify inferred.
# Each commit's test change carries a marker, selfcode-held-back-NAME, that
# must never reach the model while that commit is evaluated.
# Deterministic: fixed authors, dates and content, and no git config from
# the host, so the same script always gives the same commit ids.
set -eu
dir=${1:?usage: history.sh DIR [go|python|jest]}
lang=${2:-go}
mkdir -p "$dir"
cd "$dir"

export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME="Ada Maintainer" GIT_AUTHOR_EMAIL=ada@example.com
export GIT_COMMITTER_NAME="Ada Maintainer" GIT_COMMITTER_EMAIL=ada@example.com
hour=10
commit() { # commit MESSAGE: everything in the tree, an hour after the last
	export GIT_AUTHOR_DATE="2025-01-01T$hour:00:00Z" GIT_COMMITTER_DATE="2025-01-01T$hour:00:00Z"
	git add -A
	git commit -q --no-verify -m "$1"
	hour=$((hour + 1))
}
git init -q -b main .

if [ "$lang" = python ]; then
	# 1. A package whose tests pass.
	cat > pyproject.toml <<'EOF'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "0.1.0"

[tool.setuptools]
py-modules = ["calc"]
EOF
	printf 'limits: {max_fix_attempts: 1}\n' > .selfcode.yml
	printf 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n' > calc.py
	mkdir tests
	printf 'from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n' > tests/test_calc.py
	commit "Start the calc package"

	# 2. The fix adds mul; its test imports it beside the old tests, so on
	# the base the whole file does not import.
	printf '\n\ndef mul(a, b):\n    return a * b\n' >> calc.py
	printf 'from calc import add, mul, sub\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n\n\ndef test_mul_for_report_totals():\n    assert mul(6, 7) == 42, "selfcode-held-back-pymul"\n' > tests/test_calc.py
	commit "Report totals need a product"
	exit 0
fi

if [ "$lang" = jest ]; then
	# 1. A package whose tests pass.
	printf '{"name":"calc","version":"1.0.0","private":true,"scripts":{"test":"jest"}}\n' > package.json
	printf 'limits: {max_fix_attempts: 1}\n' > .selfcode.yml
	printf 'exports.add = (a, b) => a + b;\nexports.sub = (a, b) => a - b;\n' > calc.js
	printf 'const { add, sub } = require("./calc");\n\ntest("adds", () => { expect(add(2, 2)).toBe(4); });\ntest("subtracts", () => { expect(sub(5, 3)).toBe(2); });\n' > calc.test.js
	commit "Start the calc package"

	# 2. The fix adds mul.js; the test requires it beside the old tests, so
	# on the base the whole file does not load.
	printf 'exports.mul = (a, b) => a * b;\n' > mul.js
	printf 'const { add, sub } = require("./calc");\nconst { mul } = require("./mul");\n\ntest("adds", () => { expect(add(2, 2)).toBe(4); });\ntest("subtracts", () => { expect(sub(5, 3)).toBe(2); });\n// selfcode-held-back-jsmul\ntest("multiplies for report totals", () => { expect(mul(6, 7)).toBe(42); });\n' > calc.test.js
	commit "Report totals need a product"
	exit 0
fi

# 1. The module, with two bugs nobody has noticed yet.
cat > go.mod <<'EOF'
module example.com/calc

go 1.22
EOF
cat > .selfcode.yml <<'EOF'
verify:
  - {name: test, run: "go test ./..."}
limits: {max_fix_attempts: 1}
EOF
cat > calc.go <<'EOF'
// Package calc does small sums.
package calc

// Add returns a plus b.
func Add(a, b int) int {
	if b < 0 {
		return a
	}
	return a + b
}

func Sub(a, b int) int { return a - b }
EOF
cat > calc_test.go <<'EOF'
package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 2); got != 4 {
		t.Fatalf("Add(2, 2) = %d", got)
	}
}

func TestSub(t *testing.T) {
	if got := Sub(5, 3); got != 2 {
		t.Fatalf("Sub(5, 3) = %d", got)
	}
}
EOF
mkdir text
cat > text/reverse.go <<'EOF'
// Package text reverses strings.
package text

// Reverse returns s backwards.
func Reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
EOF
cat > text/reverse_test.go <<'EOF'
package text

import "testing"

func TestReverse(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"abc", "cba"}, {"", ""}} {
		if got := Reverse(c.in); got != c.want {
			t.Errorf("Reverse(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
EOF
commit "Start the calc module"

# 2. A setup step that cannot run anywhere (configuration only).
cat > .selfcode.yml <<'EOF'
setup: ["exit 3"]
verify:
  - {name: test, run: "go test ./..."}
limits: {max_fix_attempts: 1}
EOF
commit "CI: check the generated files before testing"

# 3. A fix made while that setup was there: its environment cannot run.
cat >> calc.go <<'EOF'

// Neg returns -a.
func Neg(a int) int { return -a }
EOF
cat >> calc_test.go <<'EOF'

func TestNeg(t *testing.T) {
	if got := Neg(3); got != -3 {
		t.Fatalf("Neg(3) = %d (selfcode-held-back-neg)", got)
	}
}
EOF
commit "Negate numbers for the ledger"

# 4. The setup step goes again (configuration only).
cat > .selfcode.yml <<'EOF'
verify:
  - {name: test, run: "go test ./..."}
limits: {max_fix_attempts: 1}
EOF
commit "CI: drop the generated files check"

# 5. A test for behaviour that was already right: nothing to fix.
cat > calc.go <<'EOF'
// Package calc does small sums.
package calc

// Add returns a plus b.
func Add(a, b int) int {
	if b < 0 {
		return a
	}
	return a + b
}

// Sub returns a minus b.
func Sub(a, b int) int { return a - b }

// Neg returns -a.
func Neg(a int) int { return -a }
EOF
cat >> calc_test.go <<'EOF'

func TestSubBelowZero(t *testing.T) {
	if got := Sub(2, 5); got != -3 {
		t.Fatalf("Sub(2, 5) = %d (selfcode-held-back-doc)", got)
	}
}
EOF
commit "Document Sub"

# 6. A real bug fix with a new test, linked to its issue.
cat > calc.go <<'EOF'
// Package calc does small sums.
package calc

// Add returns a plus b.
func Add(a, b int) int {
	return a + b
}

// Sub returns a minus b.
func Sub(a, b int) int { return a - b }

// Neg returns -a.
func Neg(a int) int { return -a }
EOF
cat >> calc_test.go <<'EOF'

func TestAddWithNegativeOperand(t *testing.T) {
	if got := Add(7, -2); got != 5 {
		t.Fatalf("Add(7, -2) = %d (selfcode-held-back-add)", got)
	}
}
EOF
commit "Add ignored a negative second operand

Fixes #1"

# 7. A fix whose test already existed and gains a case.
cat > text/reverse.go <<'EOF'
// Package text reverses strings.
package text

// Reverse returns s backwards, character by character.
func Reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
EOF
cat > text/reverse_test.go <<'EOF'
package text

import "testing"

func TestReverse(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"abc", "cba"}, {"", ""}, {"naïve façade", "edaçaf evïan"}} {
		if got := Reverse(c.in); got != c.want {
			t.Errorf("Reverse(%q) = %q, want %q (selfcode-held-back-reverse)", c.in, got, c.want)
		}
	}
}
EOF
commit "Reverse split accented letters in two"

# 8. A fix whose test calls what the fix adds: on the base the test does
# not even build.
cat >> calc.go <<'EOF'

// Mul returns a times b.
func Mul(a, b int) int { return a * b }
EOF
cat >> calc_test.go <<'EOF'

func TestMulForReportTotals(t *testing.T) {
	if got := Mul(6, 7); got != 42 {
		t.Fatalf("Mul(6, 7) = %d (selfcode-held-back-mul)", got)
	}
}
EOF
commit "Report totals need a product"
