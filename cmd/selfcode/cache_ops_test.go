package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/localrun"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// `selfcode cache list` shows a repository's cache and `cache clear
// --repo` removes it, leaving other repositories' caches alone — a local
// checkout's (`selfcode run`, `selfcode eval`) by the name it shows.
func TestCacheCommands(t *testing.T) {
	t.Parallel()
	dockertest.Manager(t) // skips (or fails under CI) without Docker and the image
	b := make([]byte, 4)
	rand.Read(b)
	mine, other := localrun.CacheName(filepath.Join(t.TempDir(), "my repo")), "cli-"+hex.EncodeToString(b)+"/other"
	data := t.TempDir()
	env := append(dockerEnv(), "SELFCODE_DATA_DIR="+data)
	t.Cleanup(func() {
		runCLI(t, env, "cache", "clear", "--repo", mine)
		runCLI(t, env, "cache", "clear", "--repo", other)
	})
	m := dockertest.Manager(t)
	ctx := context.Background()
	for _, repo := range []string{mine, other} {
		c, err := m.Start(ctx, sandbox.Spec{JobID: "cache-cli", Cache: repo})
		if err != nil {
			t.Fatal(err)
		}
		c.Close(ctx)
	}
	// Each has a verified baseline too.
	baselines, err := verify.NewCache(verify.CacheOptions{Dir: filepath.Join(data, "baselines")})
	if err != nil {
		t.Fatal(err)
	}
	key := func(repo string) verify.Key {
		return verify.Key{Repository: repo, SHA: "0123456789abcdef", Config: "cfg", Image: "sha256:one"}
	}
	for _, repo := range []string{mine, other} {
		if err := baselines.Put(key(repo), verify.Run{Passed: true}); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := runCLI(t, env, "cache", "list", "--repo", mine); code != 0 || !strings.Contains(out, mine) || strings.Contains(out, other) || !strings.Contains(out, "MiB") {
		t.Fatalf("cache list --repo: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, env, "cache", "clear", "--repo", mine); code != 0 || !strings.Contains(out, "removed 1 cache(s) and 1 baseline(s)") {
		t.Fatalf("cache clear: exit %d\n%s", code, out)
	}
	if _, found, _ := baselines.Get(key(mine)); found {
		t.Error("the cleared repository's baseline is still kept")
	}
	if _, found, _ := baselines.Get(key(other)); !found {
		t.Error("another repository's baseline was cleared")
	}
	out, code := runCLI(t, env, "cache", "list")
	if code != 0 || strings.Contains(out, mine) || !strings.Contains(out, other) {
		t.Fatalf("after clear: exit %d\n%s", code, out)
	}
}
