package testreport

import (
	"fmt"
	"strings"
	"testing"
)

// 10 000 tests, one in a hundred failing, in each runner's format.
const benchTests = 10000

func benchOutput(line func(i int, fail bool) string) string {
	var b strings.Builder
	for i := range benchTests {
		b.WriteString(line(i, i%100 == 0))
	}
	return b.String()
}

func BenchmarkParsers(b *testing.B) {
	status := func(fail bool, pass, failWord string) string {
		if fail {
			return failWord
		}
		return pass
	}
	inputs := []struct {
		name  string
		input string
		parse func(string) *Report
	}{
		{"go-text-v", benchOutput(func(i int, f bool) string {
			return fmt.Sprintf("=== RUN   Test%d\n--- %s: Test%d (0.00s)\n", i, status(f, "PASS", "FAIL"), i)
		}) + "FAIL\tex.com/p\t1.0s\n", ParseGoText},
		{"pytest-rA", benchOutput(func(i int, f bool) string {
			return fmt.Sprintf("%s tests/test_m%d.py::test_%d\n", status(f, "PASSED", "FAILED"), i%50, i)
		}), ParsePytest},
		{"unittest-v", benchOutput(func(i int, f bool) string {
			return fmt.Sprintf("test_%d (tests.test_m.T%d.test_%d) ... %s\n", i, i%50, i, status(f, "ok", "FAIL"))
		}), ParseUnittest},
		{"tap", "TAP version 13\n" + benchOutput(func(i int, f bool) string {
			return fmt.Sprintf("%s %d - test %d\n  ---\n  duration_ms: 0.1\n  ...\n", status(f, "ok", "not ok"), i+1, i)
		}) + fmt.Sprintf("1..%d\n", benchTests), ParseTAP},
		{"jest-json", `{"testResults":[{"name":"/work/a.test.js","status":"failed","assertionResults":[` + strings.TrimSuffix(benchOutput(func(i int, f bool) string {
			return fmt.Sprintf(`{"ancestorTitles":["group %d"],"title":"test %d","status":"%s","failureMessages":[]},`, i%50, i, status(f, "passed", "failed"))
		}), ",") + `]}]}`, func(s string) *Report { return ParseJestJSON([]byte(s)) }},
		{"junit-xml", `<?xml version="1.0"?><testsuites><testsuite name="pytest">` + benchOutput(func(i int, f bool) string {
			if f {
				return fmt.Sprintf(`<testcase classname="tests.test_m%d" name="test_%d"><failure message="boom">trace</failure></testcase>`, i%50, i)
			}
			return fmt.Sprintf(`<testcase classname="tests.test_m%d" name="test_%d"/>`, i%50, i)
		}) + `</testsuite></testsuites>`, func(s string) *Report { r, _ := ParseJUnit([]byte(s)); return r }},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			if r := in.parse(in.input); r.Len() < benchTests {
				b.Fatalf("parsed %d tests, want %d", r.Len(), benchTests)
			}
			b.SetBytes(int64(len(in.input)))
			for b.Loop() {
				in.parse(in.input)
			}
		})
	}
}
