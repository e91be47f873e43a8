package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

const (
	sha1 = "0123456789abcdef0123456789abcdef01234567"
	sha2 = "89abcdef0123456789abcdef0123456789abcdef"
	hash = "5f2b7c0e9d"
)

// key is the key of sha1's baseline in octo/widgets.
var key = Key{Repository: "octo/widgets", SHA: sha1, Config: hash, Image: "sha256:aaaa"}

func newTestCache(t *testing.T) (*Cache, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "baseline")
	c, err := NewCache(CacheOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c, dir
}

func TestCacheRoundTrip(t *testing.T) {
	c, dir := newTestCache(t)
	run := runFixture(t,
		step{name: "build", run: "go build ./...", file: "broken-build.txt", exit: 1},
		step{name: "test", run: "go test ./...", file: "mix.jsonl", exit: 1},
	)
	if err := c.Put(key, run); err != nil {
		t.Fatal(err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "v*", "*", sha1+"-*.json")); len(names) != 1 || filepath.Dir(names[0]) != c.repoDir(key.Repository) {
		t.Errorf("entry files %v, want one named by the commit in the repository's folder", names)
	}
	got, ok, err := c.Get(key)
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	if !reflect.DeepEqual(got, run) {
		t.Errorf("round trip changed the run:\n%+v\n%+v", got, run)
	}
	// The cached base compares like the fresh one.
	if a, b := Compare(got, run), Compare(run, run); !reflect.DeepEqual(a, b) || a.Verdict != Unverified {
		t.Errorf("cached base compares differently: %+v vs %+v", a, b)
	}
	entries, err := os.ReadDir(c.repoDir(key.Repository))
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v), want the one entry and no temp files", entries, err)
	}
}

// A baseline is found only by its whole key: another repository (a fork
// with the same commits), configuration, image or commit misses it.
func TestCacheMiss(t *testing.T) {
	c, _ := newTestCache(t)
	if err := c.Put(key, Run{Passed: true, Commands: []CommandResult{{Name: "build", Passed: true}}}); err != nil {
		t.Fatal(err)
	}
	corrupt := key
	corrupt.SHA = sha2
	p, err := c.path(corrupt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	with := func(f func(*Key)) Key {
		k := key
		f(&k)
		return k
	}
	tests := []struct {
		name    string
		key     Key
		wantErr error
		anyErr  bool
	}{
		{name: "other hash", key: with(func(k *Key) { k.Config = "other" })},
		{name: "other sha", key: with(func(k *Key) { k.SHA = sha2[:20] })},
		{name: "other repository (a fork)", key: with(func(k *Key) { k.Repository = "fork/widgets" })},
		{name: "other image", key: with(func(k *Key) { k.Image = "sha256:bbbb" })},
		{name: "image unknown", key: with(func(k *Key) { k.Image = "" })},
		{name: "short sha prefix is another key", key: with(func(k *Key) { k.SHA = sha1[:12] })},
		{name: "corrupt entry", key: corrupt, anyErr: true},
		{name: "path in sha", key: with(func(k *Key) { k.SHA = "../" + sha1 }), wantErr: ErrCacheKey},
		{name: "path in hash", key: with(func(k *Key) { k.Config = "a/../b" }), wantErr: ErrCacheKey},
		{name: "empty hash", key: with(func(k *Key) { k.Config = "" }), wantErr: ErrCacheKey},
		{name: "no repository", key: with(func(k *Key) { k.Repository = "" }), wantErr: ErrCacheKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ok, err := c.Get(tc.key)
			if ok {
				t.Error("hit, want a miss")
			}
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			case tc.wantErr == nil && tc.anyErr != (err != nil):
				t.Errorf("err = %v, want error %v", err, tc.anyErr)
			}
		})
	}
	if err := c.Put(with(func(k *Key) { k.SHA = "zz" }), Run{}); !errors.Is(err, ErrCacheKey) {
		t.Errorf("Put with a bad sha: %v", err)
	}
	if _, ok, err := c.Get(key); !ok || err != nil {
		t.Errorf("the whole key misses: %v %v", ok, err)
	}
}

func TestCachePutRefusesIncompleteRuns(t *testing.T) {
	c, _ := newTestCache(t)
	for _, cr := range []CommandResult{{Name: "a", Error: "gone"}, {Name: "a", Skipped: true}} {
		if err := c.Put(key, Run{Commands: []CommandResult{cr}}); !errors.Is(err, ErrIncompleteRun) {
			t.Errorf("Put(%+v) = %v, want ErrIncompleteRun", cr, err)
		}
	}
	if _, ok, _ := c.Get(key); ok {
		t.Error("an incomplete run was stored")
	}
}

func TestCacheConcurrent(t *testing.T) {
	c, _ := newTestCache(t)
	runs := make([]Run, 4)
	for i := range runs {
		runs[i] = Run{Passed: true, Commands: []CommandResult{{Name: fmt.Sprintf("cmd%d", i), Passed: true, Output: fmt.Sprintf("%0200d", i)}}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				want := runs[(g+i)%len(runs)]
				if err := c.Put(key, want); err != nil {
					errs <- err
					return
				}
				got, ok, err := c.Get(key)
				if err != nil || !ok {
					errs <- fmt.Errorf("get after put: %v, %v", ok, err)
					return
				}
				if !isOneOf(runs, got) {
					errs <- fmt.Errorf("read a run that was never written: %+v", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, err := os.ReadDir(c.repoDir(key.Repository))
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %d entries (%v), want 1", len(entries), err)
	}
}

// isOneOf reports whether got equals one of runs.
func isOneOf(runs []Run, got Run) bool {
	for _, r := range runs {
		if reflect.DeepEqual(r, got) {
			return true
		}
	}
	return false
}

func TestNewCacheNeedsDir(t *testing.T) {
	if _, err := NewCache(CacheOptions{}); err == nil {
		t.Error("NewCache without a directory succeeded")
	}
}
