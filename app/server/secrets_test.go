package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/pipeline"
)

// A change that adds a token-shaped string is not pushed — neither to
// selfcode's branch for an issue nor to a human's pull request branch —
// and the job's report names the file and line, never the value, which is
// in no comment, log or artifact; the work itself is kept as the job's
// diff.patch with the value removed.
func TestCredentialIsNeverPushed(t *testing.T) {
	t.Parallel()
	token := "ghp_" + "R8yKqW3nX7pL2mZ9vB4cT6hJ1sD5fG0aE8uQ"
	e := e2e.Start(t, e2e.Options{})
	e.Scripted.SetHook(func(_ context.Context, _ int, in pipeline.Input) error {
		// What a model might write after reading a token somewhere.
		return os.WriteFile(filepath.Join(in.Dir, "client.go"),
			[]byte("package hello\n\n// The API client.\nvar apiToken = \""+token+"\"\n"), 0o644)
	})
	if _, err := e.GitHub.CommitFiles(owner, repoName, "feature", "feature work", map[string]string{"NOTES.md": "notes\n"}); err != nil {
		t.Fatal(err)
	}
	pr, err := e.GitHub.AddPullRequest(owner, repoName, fakegithub.PullRequest{Title: "Feature", Head: "feature", Base: "main", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	featureHead, _ := e.GitHub.Log(owner, repoName, "feature")
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Call the API", Body: "Use the API.", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []struct {
		number int
		branch string
	}{{issue, fmt.Sprintf("selfcode/issue-%d", issue)}, {pr.Number, "feature"}} {
		code, out := e.Comment(repoName, target.number, "writer", "/selfcode call the API")
		if code != http.StatusAccepted {
			t.Fatalf("delivery: %d %v", code, out)
		}
		id := out["job_id"].(string)
		j := e.Wait(id)
		if j.State != job.StateFailed || !strings.Contains(j.Error, "client.go:4") || strings.Contains(j.Error, token) {
			t.Fatalf("job %s %q: want failed, naming client.go:4 and not the value", j.State, j.Error)
		}
		// Not pushed.
		log, _ := e.GitHub.Log(owner, repoName, target.branch)
		if target.branch == "feature" {
			if len(log) != len(featureHead) || log[0].SHA != featureHead[0].SHA {
				t.Fatalf("the human's branch moved: %+v", log)
			}
		} else if len(log) != 0 {
			t.Fatalf("%s was pushed: %+v", target.branch, log)
		}
		if f, err := e.GitHub.FileAt(owner, repoName, target.branch, "client.go"); err == nil {
			t.Fatalf("client.go reached %s: %q", target.branch, f)
		}
		// The report says where.
		named := false
		for _, c := range e.GitHub.Comments(owner, repoName, target.number) {
			if strings.Contains(c.Body, token) {
				t.Fatalf("a comment holds the value:\n%s", c.Body)
			}
			named = named || strings.Contains(c.Body, "client.go:4")
		}
		if !named {
			t.Fatalf("no comment names client.go:4: %+v", e.GitHub.Comments(owner, repoName, target.number))
		}
		// The work is kept, without the value; no artifact holds it.
		names, err := e.Server.Store.Artifacts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for name := range names {
			b, _ := e.Server.Store.Artifact(context.Background(), id, name)
			if strings.Contains(string(b), token) {
				t.Fatalf("artifact %s holds the value", name)
			}
		}
		diff, err := e.Server.Store.Artifact(context.Background(), id, "diff.patch")
		if err != nil || !strings.Contains(string(diff), "+// The API client.") || !strings.Contains(string(diff), "[REDACTED]") {
			t.Fatalf("diff.patch %q (%v): want the work with the value removed", diff, err)
		}
	}
	if prs := e.GitHub.PullRequests(owner, repoName); len(prs) != 1 {
		t.Fatalf("pull requests %+v: no new one may be opened", prs)
	}
	if strings.Contains(e.Logs(), token) {
		t.Fatal("the value is in the server's logs")
	}
}
