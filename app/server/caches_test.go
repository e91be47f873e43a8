package server

import (
	"context"
	"errors"
	"testing"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/handlers"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// The dashboard's clear (handlers.CacheAdmin) removes a repository's
// verified baselines with its cache volumes — another repository's stay —
// and refuses a name that is not OWNER/NAME before removing anything.
func TestClearCachesClearsBaselines(t *testing.T) {
	t.Parallel()
	m := dockertest.Manager(t)
	mine, other := dockertest.FreshRepo(t, m, "baselines"), dockertest.FreshRepo(t, m, "baselines-other")
	baselines, err := Baselines(&config.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	run := verify.Run{Passed: true, Commands: []verify.CommandResult{{Name: "test", Passed: true}}}
	key := func(repo string) verify.Key {
		return verify.Key{Repository: repo, SHA: "0123456789abcdef", Config: "cfg", Image: "sha256:one"}
	}
	kept := func(repo string) bool {
		t.Helper()
		_, ok, err := baselines.Get(key(repo))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, repo := range []string{mine, other} {
		if err := baselines.Put(key(repo), run); err != nil {
			t.Fatal(err)
		}
	}
	var admin handlers.CacheAdmin = Caches{Sandbox: m, Baselines: baselines}
	ctx := context.Background()
	if _, _, err := admin.ClearCaches(ctx, "not-a-repository"); !errors.Is(err, sandbox.ErrInvalid) || !kept(mine) || !kept(other) {
		t.Fatalf("an invalid name: %v; baselines kept %v %v", err, kept(mine), kept(other))
	}
	if _, _, err := admin.ClearCaches(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if kept(mine) || !kept(other) {
		t.Errorf("after clearing %s: its baseline kept %v, the other's %v", mine, kept(mine), kept(other))
	}
}
