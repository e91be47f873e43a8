package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// passing is a small passing run whose output makes its entry about size
// bytes.
func passing(size int) Run {
	return Run{Passed: true, Commands: []CommandResult{{Name: "test", Passed: true, Output: string(make([]byte, size))}}}
}

// One repository's baselines are cleared alone; clearing all clears every
// repository's.
func TestCacheClear(t *testing.T) {
	t.Parallel()
	c, _ := newTestCache(t)
	mine, other := key, key
	other.Repository = "fork/widgets"
	second := key
	second.SHA = sha2
	for _, k := range []Key{mine, second, other} {
		if err := c.Put(k, passing(10)); err != nil {
			t.Fatal(err)
		}
	}
	found := func(k Key) bool {
		t.Helper()
		_, ok, err := c.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if n, err := c.Clear(key.Repository); err != nil || n != 2 {
		t.Fatalf("Clear(%s) = %d, %v; want 2", key.Repository, n, err)
	}
	if found(mine) || found(second) || !found(other) {
		t.Errorf("after clearing %s: %v %v %v, want only the fork's left", key.Repository, found(mine), found(second), found(other))
	}
	if n, err := c.Clear(""); err != nil || n != 1 || found(other) {
		t.Errorf("Clear(all) = %d, %v (the fork's left: %v); want 1", n, err, found(other))
	}
	if err := c.Put(mine, passing(10)); err != nil || !found(mine) {
		t.Errorf("a cleared cache takes new entries: %v", err)
	}
}

// Past its size the cache removes the least recently used entries — a
// read counts as a use — and never the one just written.
func TestCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "baselines")
	keys := make([]Key, 4)
	for i := range keys {
		keys[i] = key
		keys[i].SHA = string(rune('a'+i)) + sha1[1:]
	}
	probe, err := NewCache(CacheOptions{Dir: filepath.Join(t.TempDir(), "probe")})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Put(keys[0], passing(1000)); err != nil {
		t.Fatal(err)
	}
	p, _ := probe.path(keys[0])
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// Room for three entries, not four.
	c, err := NewCache(CacheOptions{Dir: dir, MaxBytes: 3*info.Size() + info.Size()/2})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i, k := range keys[:3] {
		if err := c.Put(k, passing(1000)); err != nil {
			t.Fatal(err)
		}
		p, _ := c.path(k)
		// Written an hour ago, keys[0] first.
		if err := os.Chtimes(p, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := c.Get(keys[0]); err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	if err := c.Put(keys[3], passing(1000)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true, true} {
		if _, ok, err := c.Get(keys[i]); err != nil || ok != want {
			t.Errorf("entry %d kept: %v (%v), want %v", i, ok, err, want)
		}
	}
	// A cache too small for any entry keeps the one just written.
	tiny, err := NewCache(CacheOptions{Dir: dir, MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := tiny.Put(keys[1], passing(1000)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false, false} {
		if _, ok, err := tiny.Get(keys[i]); err != nil || ok != want {
			t.Errorf("tiny cache: entry %d kept: %v (%v), want %v", i, ok, err, want)
		}
	}
}

// Opening the cache removes what older versions left: their version
// folders and the flat entries of the versions before folders. The
// current version's entries stay.
func TestCacheRemovesOlderVersions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "baselines")
	c, err := NewCache(CacheOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(key, passing(10)); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		sha1 + "-0123.json":    `{"version": 3}`,
		".tmp-123":             "half",
		"v3/abcd/x.json":       `{"version": 3}`,
		"v2/y.json":            `{"version": 2}`,
		"README-not-ours.txt":  "an operator's note",
		"vendor/kept-too.json": "not a version folder",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	again, err := NewCache(CacheOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"README-not-ours.txt", fmt.Sprintf("v%d", cacheVersion), "vendor"}
	if !slices.Equal(names, want) {
		t.Errorf("left in the cache directory: %q, want %q", names, want)
	}
	if _, ok, err := again.Get(key); err != nil || !ok {
		t.Errorf("the current version's entry: %v, %v", ok, err)
	}
}
