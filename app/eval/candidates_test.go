package eval

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The history testdata/history.sh builds (see testdata/README.md), newest
// first. The ids are fixed: the script is deterministic.
const (
	commitMul     = "216169fd5972a0256062d1759c5f1b1eb58f67aa" // Report totals need a product: the test does not build on the base
	commitReverse = "6b0e39c"                                  // Reverse split accented letters in two: a test gains a case
	commitAdd     = "bce6482"                                  // Add ignored a negative second operand (Fixes #1)
	commitDoc     = "9df2354"                                  // Document Sub: the new test passes on the base
	commitNeg     = "50aa9d1"                                  // Negate numbers for the ledger: setup fails on the base
)

// history builds the Go test repository into a new directory.
func history(t testing.TB) string { return historyOf(t, "go") }

// historyOf builds the test repository of a language (go, python, jest)
// into a new directory.
func historyOf(t testing.TB, lang string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "calc")
	out, err := exec.Command("sh", filepath.Join("testdata", "history.sh"), dir, lang).CombinedOutput()
	if err != nil {
		t.Fatalf("testdata/history.sh %s: %v\n%s", lang, err, out)
	}
	return dir
}

func TestCandidatesFromHistory(t *testing.T) {
	t.Parallel()
	dir := history(t)
	ctx := context.Background()
	if head, _ := gitLine(ctx, dir, "rev-parse", "HEAD"); head != commitMul {
		t.Fatalf("testdata/history.sh is not deterministic: HEAD %s, want %s", head, commitMul)
	}
	all, err := Candidates(ctx, dir, 20)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range all {
		parent, _ := gitLine(ctx, dir, "rev-parse", c.Commit+"^1")
		if c.Base != parent {
			t.Errorf("%s: base %s, want its first parent %s", c.Commit[:7], c.Base, parent)
		}
		var tests []string
		for _, ch := range c.Tests {
			tests = append(tests, ch.Path)
		}
		got = append(got, c.Commit[:7]+" "+strings.Join(c.Source, ",")+" | "+strings.Join(tests, ","))
	}
	want := []string{
		commitMul[:7] + " calc.go | calc_test.go",
		commitReverse + " text/reverse.go | text/reverse_test.go",
		commitAdd + " calc.go | calc_test.go",
		commitDoc + " calc.go | calc_test.go",
		commitNeg + " calc.go | calc_test.go",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("candidates:\n%s\nwant (configuration-only and root commits left out):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	two, err := Candidates(ctx, dir, 2)
	if err != nil || len(two) != 2 || two[0].Commit != all[0].Commit || two[1].Commit != all[1].Commit {
		t.Fatalf("limit 2: %+v, %v", two, err)
	}
}

// Merges count by their diff against the first parent; deleted and
// renamed test files are held back as deletions and additions.
func TestParseLog(t *testing.T) {
	t.Parallel()
	log := "\x01c3 c2 m1\x00\nM\x00a.go\x00A\x00b_test.go\x00D\x00old_test.go\x00" +
		"\x01c2 c1\x00\nM\x00README.md\x00M\x00a_test.go\x00" + // no source change
		"\x01c1\x00\nA\x00a.go\x00A\x00a_test.go\x00" // root
	got, err := parseLog(strings.NewReader(log), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Commit != "c3" || got[0].Base != "c2" ||
		!slices.Equal(got[0].Tests, []Change{{Path: "b_test.go"}, {Path: "old_test.go", Deleted: true}}) {
		t.Fatalf("parsed %+v", got)
	}
}
