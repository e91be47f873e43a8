package eval

import (
	"context"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/internal/fakegithub"
)

func TestParseRemote(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw, host, owner, name string
		ok                     bool
	}{
		{"https://github.com/octo/calc.git", "github.com", "octo", "calc", true},
		{"https://github.com/octo/calc", "github.com", "octo", "calc", true},
		{"https://x-access-token@GitHub.com/octo/calc/", "github.com", "octo", "calc", true},
		{"git@github.com:octo/calc.git", "github.com", "octo", "calc", true},
		{"ssh://git@ghes.example.com:2222/octo/calc.git", "ghes.example.com", "octo", "calc", true},
		{"http://127.0.0.1:8123/octo/calc.git", "127.0.0.1:8123", "octo", "calc", true},
		{"/srv/git/calc.git", "", "", "", false},
		{"https://github.com/calc", "", "", "", false},
		{"git@github.com", "", "", "", false},
	}
	for _, c := range cases {
		host, owner, name, ok := parseRemote(c.raw)
		if host != c.host || owner != c.owner || name != c.name || ok != c.ok {
			t.Errorf("parseRemote(%q) = %q %q %q %v", c.raw, host, owner, name, ok)
		}
	}
	for _, c := range []struct {
		host, api string
		same      bool
	}{
		{"github.com", "https://api.github.com/", true},
		{"ghes.example.com", "https://ghes.example.com/api/v3/", true},
		{"127.0.0.1:8123", "http://127.0.0.1:8123/", true},
		{"127.0.0.1:9999", "http://127.0.0.1:8123/", false},
		{"gitlab.com", "https://api.github.com/", false},
	} {
		u, _ := url.Parse(c.api)
		if got := sameGitHub(c.host, u); got != c.same {
			t.Errorf("sameGitHub(%q, %q) = %v", c.host, c.api, got)
		}
	}
}

// A commit that says it fixes an issue gets the issue's title and body
// when the repository's GitHub remote and the App's credentials reach it;
// otherwise only its message, with the reason recorded.
func TestLinkedIssueThroughGitHub(t *testing.T) {
	t.Parallel()
	fake, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	fake.AddInstallation(7, "octo")
	if err := fake.AddRepo("octo", "calc", fakegithub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := fake.AddIssue("octo", "calc", fakegithub.Issue{Title: "Adding a negative number does nothing", Body: "Add(7, -2) gives 7."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.CommitFiles("octo", "calc", "fix", "the fix", map[string]string{"calc.go": "package calc\n"}); err != nil {
		t.Fatal(err)
	}
	pr, err := fake.AddPullRequest("octo", "calc", fakegithub.PullRequest{Title: "Fix Add", Body: "the fix itself", Head: "fix", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	factory, err := gh.New(gh.Options{AppID: fake.AppID(), PrivateKeyPEM: fake.PrivateKeyPEM(), BaseURL: fake.URL(), HTTPTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := history(t)
	msg, err := message(ctx, dir, commitAdd)
	if err != nil || !strings.HasSuffix(msg, "Fixes #1") || n != 1 {
		t.Fatalf("message %q (%v), issue %d", msg, err, n)
	}

	// No remote: the message alone.
	issues, why := GitHubIssues(ctx, dir, fake.URL(), factory)
	if issues != nil || !strings.Contains(why, "no remote") {
		t.Fatalf("without a remote: %v %q", issues, why)
	}
	task, linked := describe(ctx, msg, issues, why)
	if task != msg || len(linked) != 1 || linked[0].Included || linked[0].Why != why {
		t.Fatalf("task %q, linked %+v", task, linked)
	}

	// A remote on another host is not this GitHub.
	if out, err := exec.Command("git", "-C", dir, "remote", "add", "origin", "https://gitlab.example.com/octo/calc.git").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if issues, _ := GitHubIssues(ctx, dir, fake.URL(), factory); issues != nil {
		t.Fatal("a GitLab remote was taken for GitHub")
	}
	if out, err := exec.Command("git", "-C", dir, "remote", "add", "upstream", fake.GitURL("octo", "calc")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if issues, why := GitHubIssues(ctx, dir, fake.URL(), nil); issues != nil || !strings.Contains(why, "no GitHub App credentials") {
		t.Fatalf("without credentials: %v %q", issues, why)
	}
	issues, why = GitHubIssues(ctx, dir, fake.URL(), factory)
	if issues == nil {
		t.Fatalf("the GitHub remote was not found: %s", why)
	}
	task, linked = describe(ctx, msg, issues, why)
	if !strings.HasPrefix(task, msg) || !strings.Contains(task, "Linked issue #1: Adding a negative number does nothing\n\nAdd(7, -2) gives 7.") ||
		len(linked) != 1 || !linked[0].Included {
		t.Fatalf("task %q, linked %+v", task, linked)
	}

	// A pull request and an issue that is not there are not included.
	task, linked = describe(ctx, "Fix Add\n\nfixes #"+strconv.Itoa(pr.Number)+", closes: #99", issues, why)
	if strings.Contains(task, "the fix itself") || len(linked) != 2 || linked[0].Included || linked[1].Included ||
		!strings.Contains(linked[0].Why, "pull request") || !strings.Contains(linked[1].Why, "not readable") {
		t.Fatalf("task %q, linked %+v", task, linked)
	}
}
