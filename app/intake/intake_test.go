package intake

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/fixtures"
)

var fixedNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func router() *Router { return New(Options{Now: func() time.Time { return fixedNow }}) }

// Every published fixture routes to what the contract says for it.
func TestPublishedFixtures(t *testing.T) {
	// Default: ignore. A closed pull request cancels its jobs (none here).
	want := map[string]store.Action{"pull_request.closed.json": store.ActionCancelIssue}
	names, err := fixtures.Payloads()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			d, err := router().Route(fixtures.Event(n), fixtures.Load(t, n))
			if err != nil {
				t.Fatalf("route: %v", err)
			}
			if d.Submission.Action != want[n] {
				t.Fatalf("action %d, want %d", d.Submission.Action, want[n])
			}
			if d.Submission.Reason == "" {
				t.Fatal("an ignored delivery must say why")
			}
		})
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		sets    []any
		action  store.Action
		kind    job.Kind
		verb    string
		pr      bool
		instr   string
		ignored string
	}{
		{name: "run on issue", file: "issue_comment.created.with-installation.json", sets: []any{"comment.body", "/selfcode fix the greeting\nand add a test"},
			action: store.ActionEnqueue, kind: job.KindRun, verb: "run", instr: "fix the greeting\nand add a test"},
		{name: "plan", file: "issue_comment.created.json", sets: []any{"comment.body", "/selfcode plan tidy up"},
			action: store.ActionEnqueue, kind: job.KindPlan, verb: "plan", instr: "tidy up"},
		{name: "cancel is control", file: "issue_comment.created.json", sets: []any{"comment.body", "/selfcode cancel"},
			action: store.ActionControl, kind: job.KindControl, verb: "cancel"},
		{name: "retry is control", file: "issue_comment.created.json", sets: []any{"comment.body", "/selfcode retry"},
			action: store.ActionControl, kind: job.KindControl, verb: "retry"},
		{name: "PR comment (derived fixture)", file: "issue_comment.created.on-pull-request.json", sets: []any{"comment.body", "/selfcode rename the helper"},
			action: store.ActionEnqueue, kind: job.KindRun, verb: "run", pr: true, instr: "rename the helper"},
		{name: "review comment", file: "pull_request_review_comment.created.json", sets: []any{"comment.body", "/selfcode use fmt.Sprintf here"},
			action: store.ActionEnqueue, kind: job.KindRun, verb: "run", pr: true, instr: "use fmt.Sprintf here"},
		{name: "review with command", file: "pull_request_review.submitted.json", sets: []any{"review.body", "/selfcode address these"},
			action: store.ActionEnqueue, kind: job.KindRun, verb: "run", pr: true, instr: "address these"},
		{name: "edited comment", file: "issue_comment.edited.json", sets: []any{"comment.body", "/selfcode fix"}, ignored: "only new comments trigger"},
		{name: "bot sender", file: "issue_comment.created.json", sets: []any{"comment.body", "/selfcode fix", "sender.type", "Bot"}, ignored: "comment by a bot"},
		{name: "app's own comment", file: "issue_comment.created.json", sets: []any{"comment.body", "/selfcode fix", "sender.login", "selfcode[bot]"}, ignored: "comment by a bot"},
		{name: "command not on first line", file: "issue_comment.created.json", sets: []any{"comment.body", "hello\n/selfcode fix"}, ignored: "comment is not a /selfcode command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := router().Route(fixtures.Event(tt.file), fixtures.Load(t, tt.file, tt.sets...))
			if err != nil {
				t.Fatal(err)
			}
			s := d.Submission
			if tt.ignored != "" {
				if s.Action != store.ActionIgnore || !contains(s.Reason, tt.ignored) {
					t.Fatalf("got action %d reason %q, want ignored %q", s.Action, s.Reason, tt.ignored)
				}
				return
			}
			if s.Action != tt.action || s.Job == nil {
				t.Fatalf("action %d job %v", s.Action, s.Job)
			}
			if s.Job.Kind != tt.kind || s.Job.Trigger.Command != tt.verb || s.Job.IsPR != tt.pr || s.Job.Instructions != tt.instr {
				t.Fatalf("job kind %s verb %s pr %v instr %q", s.Job.Kind, s.Job.Trigger.Command, s.Job.IsPR, s.Job.Instructions)
			}
			if s.Job.Repo.FullName() == "/" || s.Job.Issue == 0 || s.Job.Trigger.Sender == "" {
				t.Fatalf("job lacks repo/issue/sender: %+v", s.Job)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	r := router()
	d, _ := r.Route("issues", fixtures.Load(t, "issues.labeled.json", "label.name", "selfcode"))
	if d.Submission.Action != store.ActionEnqueue || d.Submission.Job.ScheduledFor != (time.Time{}) || d.Submission.Job.IssueTitle == "" {
		t.Fatalf("selfcode label: %+v", d.Submission)
	}
	d, _ = r.Route("issues", fixtures.Load(t, "issues.labeled.json", "label.name", "selfcode:overnight"))
	j := d.Submission.Job
	if j == nil || !j.Overnight || !j.ScheduledFor.Equal(time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("overnight label: %+v", j)
	}
	d, _ = r.Route("issues", fixtures.Load(t, "issues.unlabeled.json", "label.name", "selfcode:overnight"))
	if d.Submission.Action != store.ActionCancelOvernight || d.Submission.Key != "codertocat/hello-world#1" {
		t.Fatalf("unlabel: %+v", d.Submission)
	}
	d, _ = r.Route("issues", fixtures.Load(t, "issues.unlabeled.json", "label.name", "selfcode"))
	if d.Submission.Action != store.ActionIgnore {
		t.Fatalf("removing the run label: %+v", d.Submission)
	}
}

func TestInstallationAndCheckRun(t *testing.T) {
	r := router()
	d, _ := r.Route("installation", fixtures.Load(t, "installation.created.json"))
	if d.Submission.Installation == nil || d.Submission.Installation.ID != 957387 || d.Submission.InstallationDeleted {
		t.Fatalf("installation created: %+v", d)
	}
	d, _ = r.Route("installation", fixtures.Load(t, "installation.deleted.json"))
	if !d.Submission.InstallationDeleted {
		t.Fatal("installation deleted not noted")
	}
	id := "01m7ym2ejcah23xz70rdb275bp"
	d, err := r.Route("check_run", fixtures.Load(t, "check_run.rerequested.json", "check_run.name", "selfcode", "check_run.external_id", id))
	if err != nil || d.Submission.Action != store.ActionControl || d.Submission.Job.TargetJobID != id || d.Submission.Job.Trigger.Command != "retry" {
		t.Fatalf("rerequested: %+v %v", d.Submission, err)
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name  string
		event string
		body  []byte
	}{
		{"not json", "issue_comment", []byte("{nope")},
		{"json array", "issue_comment", []byte("[1]")},
		{"no issue", "issue_comment", fixtures.MustSet(fixtures.Load(t, "issue_comment.created.json"), "issue", nil)},
		{"no comment", "issue_comment", fixtures.MustSet(fixtures.Load(t, "issue_comment.created.json"), "comment", nil)},
		{"no repository", "issue_comment", fixtures.MustSet(fixtures.Load(t, "issue_comment.created.json"), "repository", nil)},
		{"label missing", "issues", fixtures.MustSet(fixtures.Load(t, "issues.labeled.json"), "label", nil)},
		{"wrong type", "issue_comment", fixtures.MustSet(fixtures.Load(t, "issue_comment.created.json"), "issue", "seven")},
		{"no event", "", fixtures.Load(t, "ping.json")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := router().Route(tt.event, tt.body); !errs.Is(err, errs.KindInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
		})
	}
	d, err := router().Route("star", []byte(`{"action":"created"}`))
	if err != nil || d.Submission.Action != store.ActionIgnore {
		t.Fatalf("unknown event: %+v %v", d, err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func FuzzRoute(f *testing.F) {
	names, _ := fixtures.Payloads()
	for _, n := range names {
		if b, err := fixtures.Payload(n); err == nil {
			f.Add(fixtures.Event(n), b)
		}
	}
	f.Add("issue_comment", []byte(`{"action":"created","issue":{"number":1},"comment":{"body":"/selfcode x"},"repository":{"name":"r","owner":{"login":"o"}}}`))
	r := router()
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		d, err := r.Route(event, body)
		if err != nil {
			if !errs.Is(err, errs.KindInvalid) {
				t.Fatalf("non-invalid error %v", err)
			}
			return
		}
		s := d.Submission
		if (s.Action == store.ActionEnqueue || s.Action == store.ActionControl) && (s.Job == nil || s.Job.Issue == 0 && s.Job.TargetJobID == "" || s.Job.Repo.Name == "") {
			t.Fatalf("job without issue or repo: %+v", s.Job)
		}
		if s.Action == store.ActionIgnore && s.Reason == "" {
			t.Fatal("ignored without reason")
		}
	})
}

// The lean issue_comment decode decides as go-github's full decode does,
// on every published payload and on whatever the fuzzer makes of them
// (where the full decode accepts a payload; the lean one reads fewer
// fields, so it may accept one whose unread parts do not fit go-github's
// types), and never accepts malformed JSON.
func FuzzLeanIssueComment(f *testing.F) {
	names, _ := fixtures.Payloads()
	for _, n := range names {
		if b, err := fixtures.Payload(n); err == nil && fixtures.Event(n) == "issue_comment" {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"action":"created","issue":{"number":1,"pull_request":{}},"comment":{"body":"/selfcode x","user":{"login":"a[bot]"}},"repository":{"name":"r","full_name":"o/r"}}`))
	r := router()
	f.Fuzz(func(t *testing.T, body []byte) {
		full, err := github.ParseWebHook("issue_comment", body)
		if err != nil {
			if _, lerr := decodeIssueComment(body); lerr == nil && !json.Valid(body) {
				t.Fatalf("the lean decode accepts malformed JSON: %q", body)
			}
			return
		}
		want, werr := r.issueComment(full.(*github.IssueCommentEvent))
		lean, err := decodeIssueComment(body)
		if err != nil {
			t.Fatalf("the lean decode rejects what the full one accepts: %v", err)
		}
		got, gerr := r.issueComment(lean)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("lean decision %+v (%v), full %+v (%v)", got, gerr, want, werr)
		}
	})
}
