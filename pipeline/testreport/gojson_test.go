package testreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fixture reads a captured runner output from testdata.
func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ids(pkg string, tests ...string) []ID {
	var out []ID
	for _, t := range tests {
		out = append(out, ID{pkg, t})
	}
	return out
}

func TestParseGoJSON(t *testing.T) {
	const calc, strs, nothing = "example.com/mix/calc", "example.com/mix/strs", "example.com/mix/nothing"
	const bad, ok = "example.com/broken/bad", "example.com/broken/ok"
	tests := []struct {
		file         string
		packages     map[string]Status
		failures     []ID
		pkgFailures  []string
		buildFailed  []string
		incomplete   []ID
		statuses     map[ID]Status
		outputHas    map[ID]string
		textHas      []string
		textHasNot   []string
		buildErrsHas string
	}{
		{
			file:        "mix.jsonl",
			packages:    map[string]Status{calc: Fail, strs: Fail, nothing: Skip},
			failures:    append(ids(calc, "TestSub", "TestTable/wrong"), ids(strs, "TestFirstPanics")...),
			statuses:    map[ID]Status{{calc, "TestSkipped"}: Skip, {calc, "TestTable"}: Fail, {calc, "TestTable/negative"}: Pass, {strs, "TestShout"}: Pass},
			outputHas:   map[ID]string{{calc, "TestSub"}: "calc_test.go:14: Sub(5, 3) = 8, want 2", {strs, "TestFirstPanics"}: "index out of range", {calc, "TestTable/wrong"}: "Add(1, 2) = 3, want 4"},
			textHas:     []string{"--- FAIL: TestSub", "FAIL\texample.com/mix/calc", "?   \texample.com/mix/nothing\t[no test files]", "panic: runtime error"},
			textHasNot:  []string{"=== RUN", "--- PASS: TestAdd", "printing to stdout"},
			pkgFailures: nil,
		},
		{
			file:        "mixhead.jsonl",
			packages:    map[string]Status{calc: Fail, strs: Fail, nothing: Skip},
			failures:    append(ids(calc, "TestNew", "TestTable/wrong"), ids(strs, "TestFirstPanics", "TestShout")...),
			statuses:    map[ID]Status{{calc, "TestSub"}: Pass},
			outputHas:   map[ID]string{{strs, "TestShout"}: `Shout = "HI?"`},
			textHas:     []string{`Shout = "HI?"`},
			textHasNot:  []string{"=== RUN"},
			pkgFailures: nil,
		},
		{
			file:         "broken.jsonl",
			packages:     map[string]Status{bad: Fail, ok: Pass},
			pkgFailures:  []string{bad},
			buildFailed:  []string{bad},
			statuses:     map[ID]Status{{ok, "TestOK"}: Pass},
			textHas:      []string{"bad/bad.go:6:9: undefined: undefinedThing", "FAIL\texample.com/broken/bad [build failed]", "ok  \texample.com/broken/ok"},
			textHasNot:   []string{"PASS\n"},
			buildErrsHas: "bad/bad.go:9:30: cannot use 42",
		},
		{
			file:         "broken-text.jsonl", // Go < 1.24: build errors are plain text lines
			packages:     map[string]Status{bad: Fail, ok: Pass},
			pkgFailures:  []string{bad},
			buildFailed:  []string{bad},
			textHas:      []string{"# example.com/broken/bad [example.com/broken/bad.test]", "bad/bad.go:6:29: undefined: ok.Missing"},
			buildErrsHas: "bad/bad.go:6:9: undefined: undefinedThing",
		},
		{
			file:       "hang.jsonl",
			packages:   map[string]Status{"example.com/hang": Fail},
			failures:   ids("example.com/hang", "TestHangs/inner"),
			incomplete: ids("example.com/hang", "TestHangs", "TestHangs/inner"),
			statuses:   map[ID]Status{{"example.com/hang", "TestQuick"}: Pass, {"example.com/hang", "TestHangs"}: Fail},
			outputHas:  map[ID]string{{"example.com/hang", "TestHangs/inner"}: "panic: test timed out after 2s"},
			textHas:    []string{"panic: test timed out after 2s"},
		},
		{
			file:         "vetfail.jsonl",
			packages:     map[string]Status{"example.com/vetfail": Fail},
			pkgFailures:  []string{"example.com/vetfail"},
			buildFailed:  []string{"example.com/vetfail"},
			buildErrsHas: "./v_test.go:9:14: fmt.Printf format %d has arg",
		},
		{
			file:     "brokenbase.jsonl",
			packages: map[string]Status{bad: Pass, ok: Pass},
			statuses: map[ID]Status{{bad, "TestBad"}: Pass},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			rep, text := ParseGoJSON(fixture(t, "go/"+tc.file))
			if rep == nil {
				t.Fatal("no events parsed")
			}
			if !reflect.DeepEqual(rep.Suites, tc.packages) {
				t.Errorf("Suites = %v, want %v", rep.Suites, tc.packages)
			}
			if got := rep.Failures(); !slices.Equal(got, tc.failures) {
				t.Errorf("Failures() = %v, want %v", got, tc.failures)
			}
			if got := rep.SuiteFailures(); !slices.Equal(got, tc.pkgFailures) {
				t.Errorf("SuiteFailures() = %v, want %v", got, tc.pkgFailures)
			}
			if !slices.Equal(rep.Broken, tc.buildFailed) {
				t.Errorf("Broken = %v, want %v", rep.Broken, tc.buildFailed)
			}
			if !slices.Equal(rep.Incomplete, tc.incomplete) {
				t.Errorf("Incomplete = %v, want %v", rep.Incomplete, tc.incomplete)
			}
			for id, want := range tc.statuses {
				if got := rep.Tests[id]; got != want {
					t.Errorf("Tests[%v] = %q, want %q", id, got, want)
				}
			}
			for id, want := range tc.outputHas {
				if got := strings.Join(rep.Output[id], "\n"); !strings.Contains(got, want) {
					t.Errorf("Output[%v] = %q, want it to contain %q", id, got, want)
				}
			}
			for id, lines := range rep.Output {
				if rep.Tests[id] != Fail {
					t.Errorf("Output kept for %v, which did not fail", id)
				}
				for _, l := range lines {
					if strings.HasPrefix(l, "=== ") {
						t.Errorf("Output[%v] keeps framing line %q", id, l)
					}
				}
			}
			for _, s := range tc.textHas {
				if !strings.Contains(text, s) {
					t.Errorf("text lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tc.textHasNot {
				if strings.Contains(text, s) {
					t.Errorf("text has %q:\n%s", s, text)
				}
			}
			if tc.buildErrsHas != "" && !strings.Contains(strings.Join(rep.Errors, "\n"), tc.buildErrsHas) {
				t.Errorf("Errors = %q, want %q in them", rep.Errors, tc.buildErrsHas)
			}
		})
	}
}

func TestParseGoJSONTolerance(t *testing.T) {
	tests := []struct {
		name, in   string
		events     int
		buildLines int
		failures   int
	}{
		{"empty", "", 0, 0, 0},
		{"text only", "go: cannot find main module\n", 0, 1, 0},
		{"broken json", `{"Action":"fail","Package":"p","Test":"T"` + "\n", 0, 1, 0},
		{"json without action", `{"Package":"p"}` + "\n", 0, 1, 0},
		{"crlf", `{"Action":"fail","Package":"p","Test":"TestX"}` + "\r\n", 1, 0, 1},
		{"unknown action", `{"Action":"attr","Package":"p","Test":"TestX","Key":"k","Value":"v"}` + "\n", 1, 0, 0},
		{"fail without run", `{"Action":"fail","Package":"p","Test":"TestX"}` + "\n" + `{"Action":"fail","Package":"p"}`, 2, 0, 1},
		{"run without end", `{"Action":"start","Package":"p"}` + "\n" + `{"Action":"run","Package":"p","Test":"TestX"}`, 2, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, _ := ParseGoJSON(tc.in)
			if (rep != nil) != (tc.events > 0) {
				t.Fatalf("report %v, want one: %v", rep, tc.events > 0)
			}
			if rep == nil {
				return
			}
			if len(rep.Errors) != tc.buildLines || len(rep.Failures()) != tc.failures {
				t.Errorf("error lines %d, failures %d; want %d, %d",
					len(rep.Errors), len(rep.Failures()), tc.buildLines, tc.failures)
			}
		})
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	rep, _ := ParseGoJSON(fixture(t, "go/mix.jsonl"))
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*rep, back) {
		t.Errorf("round trip changed the report:\n%+v\n%+v", *rep, back)
	}
}

func FuzzParseGoJSON(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "go", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`{"Action":"run","Package":"p","Test":"T/x"}` + "\n" + `{"Action":"output","Package":"p","Test":"T/x","Output":"a\nb"}`)
	f.Fuzz(func(t *testing.T, in string) {
		rep, text := ParseGoJSON(in)
		if rep == nil {
			return
		}
		for id, lines := range rep.Output {
			if rep.Tests[id] != Fail || len(lines) > MaxTestOutputLines {
				t.Fatalf("output kept for %v: status %q, %d lines", id, rep.Tests[id], len(lines))
			}
		}
		for _, id := range rep.Failures() {
			if rep.Tests[id] != Fail {
				t.Fatalf("failure %v has status %q", id, rep.Tests[id])
			}
		}
		if len(rep.Errors) > MaxErrorLines {
			t.Fatalf("%d error lines kept", len(rep.Errors))
		}
		_ = text
	})
}

// BenchmarkParseGoJSON parses a large run (the captured fixtures repeated
// to about 10,000 events, like a mid-sized repository's `go test ./...`).
func BenchmarkParseGoJSON(b *testing.B) {
	in := strings.Repeat(fixture(b, "go/mix.jsonl")+fixture(b, "go/broken.jsonl"), 120)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		ParseGoJSON(in)
	}
}
