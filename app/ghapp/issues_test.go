package ghapp

import (
	"context"
	"reflect"
	"testing"
	"time"

	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/fakegithub"
)

func TestCommentAndSwapLabel(t *testing.T) {
	fake, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	fake.AddInstallation(1, "o")
	if err := fake.AddRepo("o", "r", fakegithub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := fake.AddIssue("o", "r", fakegithub.Issue{Title: "t", User: "u", Labels: []string{"bug", "selfcode:overnight"}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gh.New(gh.Options{AppID: fake.AppID(), PrivateKeyPEM: fake.PrivateKeyPEM(), BaseURL: fake.URL(), BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	is := Issues{Clients: f}
	j := &job.Job{Repo: job.Repo{Owner: "o", Name: "r"}, Issue: n, InstallationID: 1}
	ctx := context.Background()
	if err := is.Comment(ctx, j, "done"); err != nil {
		t.Fatal(err)
	}
	if cs := fake.Comments("o", "r", n); len(cs) != 1 || cs[0].Body != "done" {
		t.Fatalf("comments %+v", cs)
	}
	tests := []struct {
		remove, add string
		want        []string
	}{
		{"selfcode:overnight", "selfcode:done", []string{"bug", "selfcode:done"}},
		{"selfcode:overnight", "selfcode:done", []string{"bug", "selfcode:done"}}, // again: the label is gone, no error
	}
	for _, tt := range tests {
		if err := is.SwapLabel(ctx, j, tt.remove, tt.add); err != nil {
			t.Fatal(err)
		}
		if got := fake.Labels("o", "r", n); !reflect.DeepEqual(got, tt.want) {
			t.Fatalf("labels %v, want %v", got, tt.want)
		}
	}
	if err := is.Comment(ctx, &job.Job{Repo: j.Repo, Issue: n, InstallationID: 99}, "x"); err == nil {
		t.Fatal("comment through an unknown installation succeeded")
	}
}
