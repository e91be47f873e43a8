package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// cacheManager is a manager with caches on (index in a temporary folder);
// every cache the test makes is removed when it ends.
func cacheManager(t *testing.T, maxBytes int64, index string) *Manager {
	t.Helper()
	dockerClient(t)
	if index == "" {
		index = filepath.Join(t.TempDir(), "caches.json")
	}
	m, err := New(context.Background(), Options{Instance: "test-" + randomHex(4), Image: testImage(), Logger: testLogger(t),
		Cache: CacheOptions{MaxBytes: maxBytes, Index: index}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// testRepo is a repository name no other test uses; its caches are removed
// at the end.
func testRepo(t *testing.T, m *Manager, name string) string {
	repo := "test-" + randomHex(4) + "/" + name
	t.Cleanup(func() { _, _, _ = m.ClearCaches(context.Background(), repo) })
	return repo
}

// sh runs a shell command in a new container of repo's and closes it.
func sh(t *testing.T, m *Manager, repo, image, run string) Result {
	t.Helper()
	c, err := m.Start(context.Background(), Spec{JobID: "cache-" + randomHex(3), Cache: repo, Image: image})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	return mustExec(t, c, Cmd{Run: run, Timeout: 5 * time.Minute})
}

// A repository's cache is its own: a second job of the same repository
// sees what the first left, another repository sees none of it, a new
// manager (a restart) finds it again, and the toolchains point into it.
func TestCachePerRepository(t *testing.T) {
	t.Parallel()
	dockerClient(t) // skips without Docker (fails under CI)
	index := filepath.Join(t.TempDir(), "caches.json")
	m := cacheManager(t, 10<<30, index)
	a, b := testRepo(t, m, "a"), testRepo(t, m, "b")

	env := sh(t, m, a, "", "go env GOCACHE GOMODCACHE; echo $npm_config_cache $PIP_CACHE_DIR; echo mine > /cache/a-was-here")
	if env.ExitCode != 0 || !strings.Contains(env.Stdout, "/cache/go-build\n/cache/gomod\n/cache/npm /cache/pip") {
		t.Fatalf("cache environment: exit %d\n%s", env.ExitCode, env.Output)
	}
	if r := sh(t, m, a, "", "cat /cache/a-was-here"); r.ExitCode != 0 || r.Stdout != "mine\n" {
		t.Fatalf("second job of the same repository: exit %d %q", r.ExitCode, r.Output)
	}
	if r := sh(t, m, b, "", "test ! -e /cache/a-was-here && ls /cache/go-build | head -1"); r.ExitCode != 0 || r.Stdout == "" {
		t.Fatalf("another repository sees the first one's cache, or no pre-warmed build cache: exit %d %q", r.ExitCode, r.Output)
	}
	restarted := cacheManager(t, 10<<30, index)
	if r := sh(t, restarted, a, "", "cat /cache/a-was-here"); r.ExitCode != 0 || r.Stdout != "mine\n" {
		t.Fatalf("after a restart: exit %d %q", r.ExitCode, r.Output)
	}
	caches, err := restarted.Caches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]CacheInfo{}
	for _, c := range caches {
		seen[c.Repository] = c
	}
	if seen[a].Volume == "" || seen[b].Volume == "" || seen[a].Volume == seen[b].Volume || seen[a].LastUsed.IsZero() {
		t.Fatalf("caches listed: %+v", caches)
	}
	// The size measured inside the job, for engines (or API proxies) that
	// do not report disk usage, is in the index.
	raw, err := os.ReadFile(index)
	var idx map[string]cacheEntry
	if err != nil || json.Unmarshal(raw, &idx) != nil || idx[seen[a].Volume].Size <= 0 {
		t.Fatalf("cache index %s: %v", raw, err)
	}
}

// Jobs of one repository starting at once share its new cache: the engine
// fills an empty volume from the image on create, and concurrent creates
// would otherwise race filling it ("file exists").
func TestCacheFirstUseAtOnce(t *testing.T) {
	t.Parallel()
	dockerClient(t) // skips without Docker (fails under CI)
	m := cacheManager(t, 10<<30, "")
	repo := testRepo(t, m, "at-once")
	const n = 3
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			c, err := m.Start(context.Background(), Spec{JobID: "once-" + randomHex(3), Cache: repo})
			if err == nil {
				err = c.Close(context.Background())
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Errorf("start %d: %v", i, err)
		}
	}
	if r := sh(t, m, repo, "", "ls /cache/go-build | head -1"); r.ExitCode != 0 || r.Stdout == "" {
		t.Fatalf("the cache lacks the image's pre-warmed build cache: exit %d %q", r.ExitCode, r.Output)
	}
}

// The cache makes a repository's second `go test` fast without changing
// what it says: the same module passes warm as it did cold, and a
// deliberately broken test still fails warm.
func TestWarmCacheKeepsResults(t *testing.T) {
	t.Parallel()
	dockerClient(t) // skips without Docker (fails under CI)
	m := cacheManager(t, 10<<30, "")
	repo := testRepo(t, m, "warm")
	run := func(broken bool) Result {
		c, err := m.Start(context.Background(), Spec{JobID: "warm-" + randomHex(3), Cache: repo})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if err := c.CopyTree(context.Background(), "testdata/gomod"); err != nil {
			t.Fatal(err)
		}
		cmd := "go vet ./... && go test ./..."
		if broken {
			cmd = "printf 'package gomod\\n\\nimport \"testing\"\\n\\nfunc TestBroken(t *testing.T) { t.Fatal(\"broken\") }\\n' > broken_test.go && " + cmd
		}
		return mustExec(t, c, Cmd{Run: cmd, Timeout: 5 * time.Minute})
	}
	for i, tt := range []struct {
		broken bool
		exit   int
	}{{false, 0}, {false, 0}, {true, 1}, {false, 0}} {
		if r := run(tt.broken); r.ExitCode != tt.exit {
			t.Fatalf("run %d (broken %v): exit %d, want %d\n%s", i, tt.broken, r.ExitCode, tt.exit, r.Output)
		}
	}
}

// goModule starts a container of a new repository (its cache fresh from
// the image) with testdata/gomod copied in; it is closed when the test
// ends. It skips without Docker (fails under CI).
func goModule(t *testing.T, name string) *Container {
	t.Helper()
	dockerClient(t)
	m := cacheManager(t, 10<<30, "")
	repo := testRepo(t, m, name)
	c, err := m.Start(context.Background(), Spec{JobID: name + "-" + randomHex(3), Cache: repo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if err := c.CopyTree(context.Background(), "testdata/gomod"); err != nil {
		t.Fatal(err)
	}
	return c
}

// A cache spoiled between jobs (files cut short) or emptied while a job
// runs costs time, not correctness: the job rebuilds what it needs.
func TestSpoiledCacheStillWorks(t *testing.T) {
	t.Parallel()
	c := goModule(t, "spoiled")
	// The outputs this job's build wrote (newer than the mark) are cut
	// short, then the whole cache goes; only the job's own package is
	// rebuilt after the first, everything it needs after the second — a
	// library package with no imports, so that a cold rebuild stays cheap.
	for _, step := range []string{
		"touch /tmp/mark && go test ./...",
		"spoil=$(find /cache/go-build -type f -name '*-d' -newer /tmp/mark) && test -n \"$spoil\" && for f in $spoil; do echo spoiled > \"$f\"; done && go test -count=1 ./...",
		"rm -rf /cache/* && go build ./... && go list -export -f '{{.Export}}' . | grep -q '^/cache/go-build/'",
	} {
		if r := mustExec(t, c, Cmd{Run: step, Timeout: 5 * time.Minute}); r.ExitCode != 0 {
			t.Fatalf("%s: exit %d\n%s", step, r.ExitCode, r.Output)
		}
	}
}

// A repository's first job starts from the image's pre-warmed /cache
// (deploy/sandbox/warm.sh): building, vetting and testing a module that
// imports the common standard library packages compiles only the module's
// own package and the test main, never a standard library package.
func TestFirstJobUsesThePrewarmedStandardLibrary(t *testing.T) {
	t.Parallel()
	c := goModule(t, "prewarmed")
	std := "bufio bytes context encoding/json errors fmt io os os/exec path/filepath sort strconv strings sync testing time"
	r := mustExec(t, c, Cmd{Run: `set -e
test "$(go env GOCACHE)" = /cache/go-build
echo stale: $(go list -f '{{if .Stale}}{{.ImportPath}}{{end}}' ` + std + `)
{ go build -x ./... && go vet -x ./... && go test -x -count=1 ./...; } 2>&1 | grep '/compile ' | grep -o -- ' -p [^ ]*' | sort -u | sed 's/^ -p /compiled: /'
`, Timeout: 5 * time.Minute})
	if r.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", r.ExitCode, r.Output)
	}
	var compiled []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if pkg, ok := strings.CutPrefix(line, "compiled: "); ok {
			compiled = append(compiled, pkg)
		} else if stale, ok := strings.CutPrefix(line, "stale:"); ok && strings.TrimSpace(stale) != "" {
			t.Errorf("standard library packages not in the fresh cache: %s", stale)
		}
	}
	if !slices.Equal(compiled, []string{"example.com/sandboxprobe", "main"}) {
		t.Errorf("compiled %q: want the module's package and the test main only\n%s", compiled, r.Output)
	}
}

// A new image starts new caches and the repository's caches of the old
// image are removed; an image without a cache directory gets none.
func TestCacheFollowsTheImage(t *testing.T) {
	t.Parallel()
	api := dockerClient(t)
	m := cacheManager(t, 10<<30, "")
	repo := testRepo(t, m, "image")
	if r := sh(t, m, repo, "", "echo old > /cache/mark"); r.ExitCode != 0 {
		t.Fatalf("exit %d %s", r.ExitCode, r.Output)
	}
	ctx := context.Background()
	newImage := commitImage(t, api, map[string]string{"io.selfcode.test": randomHex(4)})
	if r := sh(t, m, repo, newImage, "test ! -e /cache/mark && test -d /cache/go-build"); r.ExitCode != 0 {
		t.Fatalf("the new image's cache holds the old one's files, or is not pre-filled: exit %d %s", r.ExitCode, r.Output)
	}
	list, err := api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelCache+"="+repo))})
	if err != nil || len(list.Volumes) != 1 {
		t.Fatalf("caches of %s after the image changed: %d (%v), want 1", repo, len(list.Volumes), err)
	}
	bare := commitImage(t, api, map[string]string{ImageCacheLabel: ""})
	if r := sh(t, m, repo, bare, "go env GOCACHE; test ! -e /cache/mark"); r.ExitCode != 0 || strings.HasPrefix(r.Stdout, "/cache") {
		t.Fatalf("an image without a cache directory: exit %d %s", r.ExitCode, r.Output)
	}
}

// commitImage makes an image from the test image with other labels (a new
// image ID); it is removed when the test ends.
func commitImage(t *testing.T, api *client.Client, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	created, err := api.ContainerCreate(ctx, &container.Config{Image: testImage(), Entrypoint: []string{"true"}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer api.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true})
	var changes []string
	for k, v := range labels {
		changes = append(changes, "LABEL "+k+"="+v) // an empty value means none
	}
	ref := "selfcode-cache-test:" + randomHex(6)
	res, err := api.ContainerCommit(ctx, created.ID, container.CommitOptions{Reference: ref, Changes: changes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = api.ImageRemove(context.Background(), res.ID, image.RemoveOptions{Force: true}) })
	return ref
}

// twoCaches makes the caches of two new repositories, old then recent,
// each used by one job, with a manager whose index is the file index; it
// returns their measured total size.
func twoCaches(t *testing.T) (m *Manager, index, old, recent string, total int64) {
	t.Helper()
	index = filepath.Join(t.TempDir(), "caches.json")
	m = cacheManager(t, 10<<30, index)
	old, recent = testRepo(t, m, "old"), testRepo(t, m, "recent")
	sh(t, m, old, "", "true")
	sh(t, m, recent, "", "true")
	for _, c := range mustCaches(t, m) {
		if c.Repository == old || c.Repository == recent {
			if c.Size <= 0 {
				t.Fatalf("%s: no size measured when its job ended: %+v", c.Repository, c)
			}
			total += c.Size
		}
	}
	return m, index, old, recent, total
}

// Past the size cap, the least recently used caches not in use go first.
// Not parallel: it evicts, and the other cache tests expect theirs to stay.
func TestCacheEviction(t *testing.T) {
	dockerClient(t) // skips without Docker (fails under CI)
	_, index, old, recent, total := twoCaches(t)
	// A cap just under the two caches (others, of other tests, have no
	// size in this index): removing the older one is enough.
	capped := cacheManager(t, total-1, index)
	removed, err := capped.EvictCaches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after, err := capped.Caches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	repos := map[string]bool{}
	for _, c := range after {
		repos[c.Repository] = true
	}
	if len(removed) == 0 || repos[old] || !repos[recent] {
		t.Fatalf("evicted %v; left %v: want the least recently used gone and %s kept", removed, repos, recent)
	}
	n, inUse, err := capped.ClearCaches(context.Background(), recent)
	if err != nil || n != 1 || inUse != 0 || slices.ContainsFunc(mustCaches(t, capped), func(c CacheInfo) bool { return c.Repository == recent }) {
		t.Fatalf("clear %s: removed %d, in use %d, err %v", recent, n, inUse, err)
	}
}

// Eviction runs by itself: once a job's container closes and the caches
// (as measured inside their jobs) are past the cap, the least recently used
// go, without anyone calling EvictCaches. Not parallel: it evicts.
func TestCacheEvictedWhenAJobCloses(t *testing.T) {
	dockerClient(t) // skips without Docker (fails under CI)
	m, index, old, recent, total := twoCaches(t)
	// A manager capped just under the two (other tests' caches have no
	// size in this index) runs a job of the recent repository; Close waits
	// for the eviction that job's end started.
	capped := cacheManager(t, total-1, index)
	sh(t, capped, recent, "", "true")
	if err := capped.Close(); err != nil {
		t.Fatal(err)
	}
	repos := map[string]bool{}
	for _, c := range mustCaches(t, m) {
		repos[c.Repository] = true
	}
	if repos[old] || !repos[recent] {
		t.Fatalf("caches left %v: want %s evicted when the job closed and %s kept", repos, old, recent)
	}
}

func mustCaches(t *testing.T, m *Manager) []CacheInfo {
	t.Helper()
	c, err := m.Caches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCacheDirAllowed(t *testing.T) {
	t.Parallel()
	m := &Manager{opts: Options{Workdir: DefaultWorkdir}}
	for dir, want := range map[string]bool{"/cache": true, "/var/cache/selfcode": true, "": false, "cache": false, "/": false,
		"/work": false, "/work/c": false, "/tmp/c": false, "/proc": false, "/usr/lib/x": false, "/cache/../etc": false, "/cache/": false} {
		if got := m.cacheDirAllowed(dir); got != want {
			t.Errorf("cacheDirAllowed(%q) = %v, want %v", dir, got, want)
		}
	}
}

// What setup adds to the work tree is kept by key and restored into a later
// container of the repository — dependency directories, new or inside old
// directories, never over a file of the checkout; another key restores
// nothing, and neither does a forgotten one. A setup that also wrote or
// changed a file outside dependency directories (build output of the
// sources, stale for another commit) keeps nothing.
func TestSetupKeptAndRestored(t *testing.T) {
	t.Parallel()
	dockerClient(t) // skips without Docker (fails under CI)
	m := cacheManager(t, 10<<30, "")
	repo := testRepo(t, m, "setup")
	ctx := context.Background()
	const (
		deps    = "0123456789abcdef0123456789abcdef"
		built   = "1123456789abcdef0123456789abcdef"
		changed = "2123456789abcdef0123456789abcdef"
		other   = "fedcba9876543210fedcba9876543210"
		// Dependencies only: node_modules, an egg-info beside the sources.
		depsSetup = "mkdir -p node_modules/dep src/app.egg-info && echo dep > node_modules/dep/index.js && echo info > src/app.egg-info/PKG-INFO"
	)
	tree := t.TempDir()
	for name, body := range map[string]string{"package.json": "{}\n", "src/a.js": "a\n", "built.txt": "from the checkout\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := func() *Container {
		t.Helper()
		c, err := m.Start(ctx, Spec{JobID: "setup-" + randomHex(3), Cache: repo})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		if err := c.CopyTree(ctx, tree); err != nil {
			t.Fatal(err)
		}
		return c
	}
	restore := func(c *Container, key string, want bool) {
		t.Helper()
		if hit, err := c.RestoreSetup(ctx, key); err != nil || hit != want {
			t.Fatalf("restore %s: hit %v (want %v), %v", key, hit, want, err)
		}
	}
	for key, setup := range map[string]string{
		deps:    depsSetup,
		built:   depsSetup + " && mkdir dist && echo bundle > dist/bundle.js",
		changed: depsSetup + " && echo rebuilt > built.txt",
	} {
		c := start()
		restore(c, key, false) // an empty cache
		mustExec(t, c, Cmd{Run: setup})
		if err := c.SaveSetup(ctx, key); err != nil {
			t.Fatal(err)
		}
		c.Close(ctx)
	}

	c := start()
	restore(c, deps, true)
	if r := mustExec(t, c, Cmd{Run: "cat node_modules/dep/index.js src/app.egg-info/PKG-INFO src/a.js built.txt"}); r.Stdout != "dep\ninfo\na\nfrom the checkout\n" {
		t.Errorf("restored tree: %q", r.Stdout)
	}
	c.Close(ctx)

	c = start()
	restore(c, built, false)
	restore(c, changed, false)
	restore(c, other, false)
	if _, err := c.RestoreSetup(ctx, "../../etc"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a key that is not hex: %v", err)
	}
	if err := c.ForgetSetup(ctx, deps); err != nil {
		t.Fatal(err)
	}
	restore(c, deps, false)
}
