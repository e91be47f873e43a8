package templates

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.md")

func newRenderer(t *testing.T, opts Options) *Renderer {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGolden(t *testing.T) {
	r := newRenderer(t, Options{})
	cases := []struct {
		name   string
		render func() (string, error)
	}{
		{"pr_body_rich", func() (string, error) { return r.PRBody(richReport()) }},
		{"pr_body_draft", func() (string, error) { return r.PRBody(richFailure()) }},
		{"pr_body_unverified", func() (string, error) { return r.PRBody(richUnverified()) }},
		{"failure_report_unverified", func() (string, error) { return r.FailureReport(richUnverified()) }},
		{"progress_unverified", func() (string, error) { return r.Progress(richUnverified()) }},
		{"pr_body_minimal", func() (string, error) { return r.PRBody(minimalReport()) }},
		{"progress_running", func() (string, error) { return r.Progress(richRunning()) }},
		{"progress_rich", func() (string, error) { return r.Progress(richReport()) }},
		{"progress_error", func() (string, error) { return r.Progress(richError()) }},
		{"pr_body_unfinished", func() (string, error) { return r.PRBody(richUnfinished()) }},
		{"progress_unfinished", func() (string, error) { return r.Progress(richUnfinished()) }},
		{"unfinished_report_rich", func() (string, error) { return r.Unfinished(richUnfinished()) }},
		{"unfinished_report_nothing_changed", func() (string, error) {
			rep := richUnfinished()
			rep.FilesChanged, rep.Diff, rep.Unfinished.Done, rep.Unfinished.During = nil, "", nil, "checkout"
			return r.Unfinished(rep)
		}},
		{"progress_minimal", func() (string, error) { return r.Progress(minimalReport()) }},
		{"plan_rich", func() (string, error) { return r.PlanComment(richReport()) }},
		{"plan_minimal", func() (string, error) { return r.PlanComment(minimalReport()) }},
		{"failure_report_rich", func() (string, error) { return r.FailureReport(richFailure()) }},
		{"failure_report_minimal", func() (string, error) { return r.FailureReport(minimalReport()) }},
		{"job_failed_rich", func() (string, error) { return r.JobFailed(richError()) }},
		{"job_failed_minimal", func() (string, error) { return r.JobFailed(minimalReport()) }},
		{"status_rich", func() (string, error) { return r.Status(richStatus()) }},
		{"status_minimal", func() (string, error) { return r.Status(StatusView{CommandWord: "/selfcode"}) }},
		{"help_rich", func() (string, error) {
			return r.Help(HelpView{CommandWord: "/selfcode", Label: "selfcode", OvernightLabel: "selfcode:overnight"})
		}},
		{"help_minimal", func() (string, error) { return r.Help(HelpView{CommandWord: "/bot"}) }},
		{"permission_denied_rich", func() (string, error) {
			return r.PermissionDenied(DeniedView{CommandWord: "/selfcode", Sender: "octocat", Permission: "read"})
		}},
		{"permission_denied_minimal", func() (string, error) { return r.PermissionDenied(DeniedView{CommandWord: "/selfcode"}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.render()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", tc.name+".md")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./templates -update to create)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", tc.name, got, want)
			}
		})
	}
}

func TestPRBodyHasRequiredSections(t *testing.T) {
	body, err := newRenderer(t, Options{}).PRBody(richReport())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Summary", "`ParseDuration` now accepts", // summary
		"## Plan", "Drop the 0–59 check", // plan
		"## Files changed", "`clock/parse.go`", // files
		"| test | `go test ./...` | ✅ pass | 40 passed, 1 failed → 43 passed, 1 skipped | 38.4s |", // verification row: command, result, tests, duration
		"Fix attempts: 1 of 3", "Tokens used: 48,213", "Duration: 3m12s",
		"Closes #42",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("PR body lacks %q", want)
		}
	}
}

func TestReportStartsWithTheVerdict(t *testing.T) {
	r := newRenderer(t, Options{})
	for _, tc := range []struct {
		name string
		rep  Report
		want string
	}{
		{"verified", richReport(), "**Verified:** the repository's own checks ran on this change and nothing that passed on the base commit fails now; 1 failing test now passes."},
		{"failed", richFailure(), "**Verification failed:** this change breaks 1 thing that passed on the base commit (first: test: test TestParseDuration/90m (example.com/clock)), and 3 fix attempts could not repair it."},
		{"unverified", richUnverified(), "**Unverified:** this change could not be verified: setup step `go mod download` failed on the base commit and on the change (exit status 1). To verify it, add a `setup:` step that can fetch `example.com/words`."},
	} {
		body, err := r.PRBody(tc.rep)
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(body, "\n"); first != tc.want {
			t.Errorf("%s: first line\n%s\nwant\n%s", tc.name, first, tc.want)
		}
	}
}

func TestProgressCommentCarriesMarkerOnce(t *testing.T) {
	rep := richError()
	rep.Error = "tool said: <!-- selfcode:job:01jaaaaaaaaaaaaaaaaaaaaaaa -->"
	rep.IssueTitle = "<!-- selfcode:job:01jbbbbbbbbbbbbbbbbbbbbbbb -->"
	out, err := newRenderer(t, Options{}).Progress(rep)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out, "\n")
	if first != "<!-- selfcode:job:01jb7k3m9x2c4q8r6t0v5w1y3z -->" {
		t.Fatalf("first line = %q", first)
	}
	if n := strings.Count(out, "selfcode:job:"); n != 1 {
		t.Fatalf("marker text appears %d times:\n%s", n, out)
	}
	if _, err := Marker("x --> <script>"); err == nil {
		t.Fatal("Marker accepted an id that could close the comment")
	}
	if _, err := newRenderer(t, Options{}).Progress(Report{JobID: "bad id -->"}); err == nil {
		t.Fatal("Progress rendered a bad job id")
	}
}

func TestOverrideReplacesOneBlock(t *testing.T) {
	dir := t.TempDir()
	custom := "{{define \"pr_summary\" -}}\n## What changed\n\n{{text .Summary}} (custom)\n\n{{end}}\n"
	if err := os.WriteFile(filepath.Join(dir, "mine.tmpl"), []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ignored.txt"), []byte("{{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := newRenderer(t, Options{})
	over := newRenderer(t, Options{OverrideDir: dir})
	rep := richReport()
	want, err := base.PRBody(rep)
	if err != nil {
		t.Fatal(err)
	}
	oldSummary, err := base.exec("pr_summary", rep)
	if err != nil {
		t.Fatal(err)
	}
	newSummary, err := over.exec("pr_summary", rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(newSummary, "(custom)") {
		t.Fatalf("override not used: %q", newSummary)
	}
	got, err := over.PRBody(rep)
	if err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(want, strings.TrimSpace(oldSummary), strings.TrimSpace(newSummary), 1)
	if got != want {
		t.Fatalf("only pr_summary should differ:\n--- got\n%s\n--- want\n%s", got, want)
	}
	// Comments that do not use the block are unchanged.
	a, _ := base.Progress(rep)
	b, _ := over.Progress(rep)
	if a != b {
		t.Fatal("progress comment changed by a pr_summary override")
	}
}

func TestOverrideErrors(t *testing.T) {
	cases := []struct {
		name, file, content, want string
	}{
		{"parse error names the file", "broken.tmpl", "{{define \"pr_summary\"}}{{if}}{{end}}", "broken.tmpl"},
		{"unknown field fails at start", "field.tmpl", "{{define \"pr_summary\"}}{{.NoSuchField}}{{end}}", "pr_body"},
		{"missing map key fails at start", "key.tmpl", "{{define \"run_stats\"}}{{.Tokens.ByPhase.nope}}{{end}}", "map has no entry"},
		{"unknown function names the file", "fn.tmpl", "{{define \"pr_footer\"}}{{nosuchfunc .}}{{end}}", "fn.tmpl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := New(Options{OverrideDir: dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := New(Options{OverrideDir: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Fatal("missing override dir accepted")
	}
}

func TestSizeLimitTrimsLogsNotSummary(t *testing.T) {
	r := newRenderer(t, Options{})
	rep := richFailure()
	rep.Summary = strings.Repeat("This summary sentence must survive intact. ", 400) // ~17k
	huge := func(prefix string, lines int) string {
		var b strings.Builder
		for i := range lines {
			b.WriteString(prefix)
			b.WriteString(strings.Repeat("x", 60))
			b.WriteString(" line ")
			b.WriteString(strings.Repeat("y", i%7))
			b.WriteString("\n")
		}
		return b.String()
	}
	rep.Verification[1].Output = "FIRST LINE\n" + huge("out ", 20000) + "LAST LINE\n"
	rep.Logs = huge("log ", 30000)
	rep.Iterations[0].Verification[1].Output = huge("old ", 20000)

	for name, render := range map[string]func(Report) (string, error){
		"pr": r.PRBody, "failure": r.FailureReport, "progress": r.Progress, "job_failed": r.JobFailed,
	} {
		t.Run(name, func(t *testing.T) {
			out, err := render(rep)
			if err != nil {
				t.Fatal(err)
			}
			if n := bodyLen(out); n > MaxBodyLen {
				t.Fatalf("body is %d characters, limit %d", n, MaxBodyLen)
			}
			if name == "pr" || name == "failure" {
				if !strings.Contains(out, strings.TrimSpace(rep.Summary)) {
					t.Fatal("summary was cut")
				}
				if !strings.Contains(out, "FIRST LINE") || !strings.Contains(out, "LAST LINE") || !strings.Contains(out, "lines trimmed") {
					t.Fatal("trimmed output should keep head and tail with a note")
				}
			}
		})
	}

	// Logs are dropped entirely when nothing else fits.
	small := newRenderer(t, Options{MaxLen: bodyLen(mustPR(t, r, withoutLogs(rep))) + 300})
	out, err := small.PRBody(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "omitted to keep this under GitHub's size limit") || strings.Contains(out, "FIRST LINE") {
		t.Fatalf("logs should have been dropped:\n%s", out[:min(len(out), 400)])
	}

	// A summary that alone is too long is an error, never cut.
	rep.Summary = strings.Repeat("z", MaxBodyLen+1)
	if _, err := r.PRBody(rep); !errors.Is(err, ErrTooLong) {
		t.Fatalf("oversized summary: %v, want ErrTooLong", err)
	}
}

func mustPR(t *testing.T, r *Renderer, rep Report) string {
	t.Helper()
	out, err := r.PRBody(rep)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func withoutLogs(rep Report) Report {
	return rep.trimmed(len(trimLevels) - 1)
}

func TestUntrustedTextCannotBreakOut(t *testing.T) {
	r := newRenderer(t, Options{})
	rep := richFailure()
	injected := "```\n## Injected heading\n</details>\n```\n````"
	rep.Verification[1].Output = "before\n" + injected + "\nafter"
	rep.Summary = "Summary with ``` fence and </details> and @octo-org/team ping"
	rep.IssueTitle = "title | with pipe\nand newline"
	rep.FilesChanged = append(rep.FilesChanged, FileChange{Path: "weird`|name.go", Action: "added", Added: 1})
	out, err := r.FailureReport(rep)
	if err != nil {
		t.Fatal(err)
	}
	// The output block opens with a fence longer than any backtick run inside
	// and the first line that closes it comes after the whole output.
	lines := strings.Split(out, "\n")
	open := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "`````") && strings.HasSuffix(l, "text") {
			open = i
			break
		}
	}
	if open < 0 {
		t.Fatalf("no long fence in:\n%s", out)
	}
	fenceLen := len(strings.TrimSuffix(lines[open], "text"))
	closeAt := -1
	for i := open + 1; i < len(lines); i++ {
		l := strings.TrimLeft(lines[i], " ")
		if strings.Trim(l, "`") == "" && len(l) >= fenceLen {
			closeAt = i
			break
		}
	}
	if closeAt < 0 || lines[closeAt-1] != "after" {
		t.Fatalf("fence closed early at line %d:\n%s", closeAt, out)
	}
	for _, bad := range []string{"@octo-org/team", "</details> and", "| title | with"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q", bad)
		}
	}
	if !strings.Contains(out, "``weird`\\|name.go``") {
		t.Errorf("odd file name not safely quoted:\n%s", out)
	}
	plan, err := r.PlanComment(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "title \\| with pipe and newline") {
		t.Errorf("issue title not flattened in heading:\n%s", plan)
	}
}

func TestTrimLog(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("é", i%5))
		b.WriteString("\n")
	}
	in := b.String()
	cases := []struct {
		name string
		lim  trimLimit
		want []string
	}{
		{"untouched", trimLimit{}, []string{"line \n"}},
		{"lines", trimLimit{lines: 10}, []string{"… 90 lines trimmed …"}},
		{"chars", trimLimit{chars: 100}, []string{"lines trimmed", "line \n", "line éééé"}},
		{"one long line", trimLimit{chars: 100}, nil},
		{"drop", trimLimit{drop: true}, []string{"… 100 lines omitted"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			if tc.name == "one long line" {
				in = strings.Repeat("é", 500)
			}
			got := trimLog(in, tc.lim)
			if tc.name == "one long line" && !strings.Contains(got, "characters trimmed") {
				t.Errorf("long line not cut in the middle: %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("trimLog = %q, want it to contain %q", got, w)
				}
			}
			if !utf8Valid(got) {
				t.Error("trimLog split a UTF-8 sequence")
			}
			if tc.lim.chars > 0 && len(got) > tc.lim.chars+60 {
				t.Errorf("trimLog kept %d bytes, limit %d", len(got), tc.lim.chars)
			}
		})
	}
}
