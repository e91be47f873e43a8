package github

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/selfcode/selfcode/internal/fakegithub"
)

// An Actions job's log is downloaded only from GitHub's hosts: when
// GitHub's answer, or a redirect of the download, points at another host
// — a listener on this machine standing in for the admin API or a
// metadata endpoint — the download fails with ErrForeignHost and that
// host receives nothing.
func TestActionsLogOnlyFromGitHubsHosts(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	ctx := ctxT(t)
	var hits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("{\"jobs\": \"the admin API's answer\"}"))
	}))
	t.Cleanup(elsewhere.Close)

	e.fake.SetJobLog(1, "##[group]Run go test\nFAIL\n")
	if log, err := c.ActionsJobLog(ctx, "octo", "hello", 1, 1<<20); err != nil || log != "##[group]Run go test\nFAIL\n" {
		t.Fatalf("the log from GitHub's own host: %q, %v", log, err)
	}
	e.fake.SetJobLog(2, "x")
	e.fake.SetJobLogURL(2, elsewhere.URL+"/api/backup")
	e.fake.SetJobLog(3, "x")
	e.fake.SetJobLogRedirect(3, elsewhere.URL+"/api/backup")
	for _, id := range []int64{2, 3} {
		if log, err := c.ActionsJobLog(ctx, "octo", "hello", id, 1<<20); !errors.Is(err, ErrForeignHost) || log != "" {
			t.Fatalf("job %d: a log from elsewhere: %q, %v", id, log, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the other host received %d requests", n)
	}
}

func TestLogHost(t *testing.T) {
	t.Parallel()
	dotcom, _ := url.Parse("https://api.github.com/")
	ghes, _ := url.Parse("https://ghe.example.com/api/v3/")
	local, _ := url.Parse("http://127.0.0.1:8123/")
	tests := []struct {
		api  *url.URL
		to   string
		want bool
	}{
		{dotcom, "https://pipelinesghubeus6.actions.githubusercontent.com/abc/_apis/pipelines/1/runs/2/signedlogcontent/3?sig=x", true},
		{dotcom, "https://productionresultssa0.blob.core.windows.net/actions-results/x/logs/job/job-logs.txt?sig=y", true},
		{dotcom, "https://api.github.com/repos/o/r/actions/jobs/1/logs", true},
		{dotcom, "http://productionresultssa0.blob.core.windows.net/x", false},
		{dotcom, "https://productionresultssa0.blob.core.windows.net:8443/x", false},
		{dotcom, "https://actions.githubusercontent.com.evil.example/x", false},
		{dotcom, "https://user:pw@pipelines.actions.githubusercontent.com/x", false},
		{dotcom, "http://169.254.169.254/latest/meta-data/", false},
		{dotcom, "http://127.0.0.1:9090/api/backup", false},
		{ghes, "https://ghe.example.com/_services/pipelines/x", true},
		{ghes, "https://GHE.example.com/x", true},
		{ghes, "http://ghe.example.com/x", false},
		{ghes, "https://productionresultssa0.blob.core.windows.net/x", false},
		{local, "http://127.0.0.1:8123/_job-logs/1", true},
		{local, "http://127.0.0.1:9090/api/backup", false},
		{local, "http://localhost:8123/x", false},
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if got := logHost(tc.api, u); got != tc.want {
			t.Errorf("API %s, log at %s: %v, want %v", tc.api, tc.to, got, tc.want)
		}
	}
}
