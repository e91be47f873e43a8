package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/store"
)

// fakeCaches is a CacheAdmin with two repositories' caches.
type fakeCaches struct {
	mu      sync.Mutex
	caches  []sandbox.CacheInfo
	cleared []string
}

func (f *fakeCaches) Caches(ctx context.Context) ([]sandbox.CacheInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sandbox.CacheInfo(nil), f.caches...), nil
}

func (f *fakeCaches) ClearCaches(ctx context.Context, repo string) (int, int, error) {
	if repo != "" {
		if err := sandbox.CheckRepository(repo); err != nil {
			return 0, 0, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleared = append(f.cleared, repo)
	n := 0
	kept := f.caches[:0]
	for _, c := range f.caches {
		if repo == "" || c.Repository == repo {
			n++
			continue
		}
		kept = append(kept, c)
	}
	f.caches = kept
	return n, 0, nil
}

func cacheServer(t *testing.T, caches CacheAdmin) string {
	t.Helper()
	st, err := store.Open(store.Options{Path: t.TempDir() + "/selfcode.db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng, err := NewAdmin(AdminOptions{Jobs: st, Canceler: st, Caches: caches})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The dashboard lists each repository's cache with its size and clears one
// repository's (or all) from a same-origin form; the API does the same.
func TestDashboardCaches(t *testing.T) {
	t.Parallel()
	used := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	f := &fakeCaches{caches: []sandbox.CacheInfo{
		{Repository: "octo/widgets", Volume: "selfcode-cache-1", Image: "sha256:0123456789abcdef0123", Size: 3 << 30 / 2, LastUsed: used},
		{Repository: "octo/<b>tools</b>", Volume: "selfcode-cache-2", Image: "sha256:fedcba9876543210fedc", Size: -1, LastUsed: used},
	}}
	base := cacheServer(t, f)
	code, _, page := get(t, base+"/caches")
	for _, want := range []string{"octo/widgets", "1.5GiB", "0123456789ab", "unknown", "octo/&lt;b&gt;tools&lt;/b&gt;", `action="/caches/clear"`} {
		if code != 200 || !strings.Contains(page, want) {
			t.Fatalf("cache page (%d) lacks %q:\n%s", code, want, page)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := func(repo string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, base+"/caches/clear", strings.NewReader(url.Values{"repo": {repo}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Origin", base)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := form("octo/widgets"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/caches?removed=1&in_use=0" {
		t.Fatalf("clear octo/widgets: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := form("not a repo"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("clear with a bad repository: %d", resp.StatusCode)
	}
	if _, _, page := get(t, base+"/caches?removed=1&in_use=0"); strings.Contains(page, "octo/widgets") || !strings.Contains(page, "Removed 1 cache(s)") {
		t.Fatalf("after the clear:\n%s", page)
	}
	var list struct{ Caches []sandbox.CacheInfo }
	code, _, body := get(t, base+"/api/caches")
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Caches) != 1 {
		t.Fatalf("GET /api/caches: %d %s", code, body)
	}
	resp, err := http.Post(base+"/api/caches/clear", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var cleared struct{ Removed, InUse int }
	json.NewDecoder(resp.Body).Decode(&cleared)
	resp.Body.Close()
	if resp.StatusCode != 200 || cleared.Removed != 1 {
		t.Fatalf("POST /api/caches/clear {}: %d %+v", resp.StatusCode, cleared)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.Join(f.cleared, ",") != "octo/widgets," {
		t.Errorf("cleared %q, want octo/widgets then all", f.cleared)
	}
}

// Without a sandbox engine the cache page says so.
func TestDashboardCachesWithoutEngine(t *testing.T) {
	t.Parallel()
	base := cacheServer(t, nil)
	if code, _, page := get(t, base+"/caches"); code != http.StatusNotFound || !strings.Contains(page, "No sandbox engine") {
		t.Fatalf("cache page without an engine: %d\n%s", code, page)
	}
}
