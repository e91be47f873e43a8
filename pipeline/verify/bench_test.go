package verify

import (
	"github.com/selfcode/selfcode/pipeline/testreport"

	"strings"
	"testing"
)

// BenchmarkSummarizeTightBudget measures the cutting loop with many
// regressions and a small budget.
func BenchmarkSummarizeTightBudget(b *testing.B) {
	var sb strings.Builder
	for i := range 300 {
		sb.WriteString(`{"Action":"run","Package":"p","Test":"TestN` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `"}` + "\n")
	}
	base := runFixture(b, step{name: "test", run: "go test ./...", file: "brokenbase.jsonl"})
	head := runFixture(b, step{name: "test", run: "go test ./...", file: "mix.jsonl", exit: 1})
	head.Commands[0].Tests, _ = testreport.ParseGoJSON(sb.String() + fixture(b, "mix.jsonl"))
	cmp := Compare(base, head)
	for b.Loop() {
		Summarize(cmp, head, SummaryOptions{MaxTokens: 300})
	}
}
