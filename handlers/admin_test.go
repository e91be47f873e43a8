package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/store"
)

func newAdmin(t *testing.T) (*store.Store, string) {
	t.Helper()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := NewAdmin(AdminOptions{Jobs: st, Canceler: st, Metrics: metrics.New(metrics.Options{Stats: st}).Handler()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	t.Cleanup(func() { srv.Close(); st.Close() })
	return st, srv.URL
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil && resp.StatusCode == 200 {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func TestJobsAPI(t *testing.T) {
	st, base := newAdmin(t)
	ctx := context.Background()
	var ids []string
	for i := 1; i <= 5; i++ {
		rc, err := st.Submit(ctx, store.Submission{DeliveryID: fmt.Sprint(i), Action: store.ActionEnqueue,
			Job: &job.Job{Repo: job.Repo{Owner: "octo", Name: "demo"}, Issue: i, Trigger: job.Trigger{Sender: "m"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rc.JobID)
	}
	var page struct {
		Jobs []map[string]any `json:"jobs"`
		Next string           `json:"next"`
	}
	if code := getJSON(t, base+"/api/jobs?limit=2", &page); code != 200 || len(page.Jobs) != 2 || page.Next == "" {
		t.Fatalf("page 1: %d %+v", code, page)
	}
	for _, k := range []string{"id", "state", "outcome", "repository", "issue", "created_at", "updated_at"} {
		if _, ok := page.Jobs[0][k]; !ok {
			t.Fatalf("job lacks %q: %v", k, page.Jobs[0])
		}
	}
	if page.Jobs[0]["id"] != ids[4] || page.Jobs[0]["repository"] != "octo/demo" {
		t.Fatalf("newest first: %v", page.Jobs[0])
	}
	seen := 2
	for i := 0; i < 5 && page.Next != ""; i++ {
		next := page.Next
		page.Jobs, page.Next = nil, ""
		getJSON(t, base+"/api/jobs?limit=2&cursor="+next, &page)
		seen += len(page.Jobs)
	}
	if seen != 5 {
		t.Fatalf("paged through %d jobs", seen)
	}
	for _, bad := range []string{"?limit=x", "?limit=0", "?state=bogus", "?cursor=nope"} {
		if code := getJSON(t, base+"/api/jobs"+bad, nil); code != 400 {
			t.Fatalf("%s: %d", bad, code)
		}
	}

	st.PutArtifact(ctx, ids[0], "plan.json", []byte(`{"summary":"x"}`))
	var detail map[string]any
	if code := getJSON(t, base+"/api/jobs/"+ids[0], &detail); code != 200 || detail["artifacts"].(map[string]any)["plan.json"] == nil {
		t.Fatalf("detail %d %v", code, detail)
	}
	if code := getJSON(t, base+"/api/jobs/01m7ym2ejcah23xz70rdb275bp", nil); code != 404 {
		t.Fatalf("unknown job: %d", code)
	}

	resp, _ := http.Post(base+"/api/jobs/"+ids[1]+"/cancel", "", nil)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	resp, _ = http.Post(base+"/api/jobs/"+ids[1]+"/cancel", "", nil)
	resp.Body.Close()
	if resp.StatusCode != 409 {
		t.Fatalf("second cancel: %d, want 409", resp.StatusCode)
	}
	var canceled struct{ Jobs []map[string]any }
	getJSON(t, base+"/api/jobs?state=canceled", &canceled)
	if len(canceled.Jobs) != 1 {
		t.Fatalf("state filter: %v", canceled.Jobs)
	}

	resp, _ = http.Get(base + "/metrics")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`selfcode_jobs{state="queued"} 4`, `selfcode_jobs{state="canceled"} 1`, `selfcode_queue_depth{lane="pipeline"} 4`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
	resp, _ = http.Get(base + "/")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), ids[0]) {
		t.Fatal("dashboard does not list jobs")
	}
}
