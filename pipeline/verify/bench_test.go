package verify

import (
	"strings"
	"testing"
)

// BenchmarkParseTestJSON parses a large run (the captured fixtures repeated
// to about 10,000 events, like a mid-sized repository's `go test ./...`).
func BenchmarkParseTestJSON(b *testing.B) {
	in := strings.Repeat(fixture(b, "mix.jsonl")+fixture(b, "broken.jsonl"), 120)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		ParseTestJSON(in)
	}
}

// BenchmarkSummarizeTightBudget measures the cutting loop with many
// regressions and a small budget.
func BenchmarkSummarizeTightBudget(b *testing.B) {
	var sb strings.Builder
	for i := range 300 {
		sb.WriteString(`{"Action":"run","Package":"p","Test":"TestN` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `"}` + "\n")
	}
	base := runFixture(b, step{name: "test", run: "go test ./...", file: "brokenbase.jsonl"})
	head := runFixture(b, step{name: "test", run: "go test ./...", file: "mix.jsonl", exit: 1})
	head.Commands[0].Tests, _ = ParseTestJSON(sb.String() + fixture(b, "mix.jsonl"))
	cmp := Compare(base, head)
	for b.Loop() {
		Summarize(cmp, head, SummaryOptions{MaxTokens: 300})
	}
}
