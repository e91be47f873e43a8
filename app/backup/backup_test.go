package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
)

func openStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "selfcode.db")
	st, err := store.Open(store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func addJobs(t *testing.T, st *store.Store, from, n int) []string {
	t.Helper()
	var ids []string
	for i := from; i < from+n; i++ {
		rc, err := st.Submit(context.Background(), store.Submission{DeliveryID: "d" + strconv.Itoa(i), Action: store.ActionEnqueue,
			Job: &job.Job{Kind: job.KindRun, Repo: job.Repo{Owner: "o", Name: "r"}, Issue: i, Trigger: job.Trigger{Sender: "s"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rc.JobID)
	}
	return ids
}

// serve is the admin endpoint in miniature: Write into the response.
func serve(t *testing.T, db *bolt.DB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := Write(r.Context(), db, w, func(n int64) { w.Header().Set("Content-Length", strconv.FormatInt(n, 10)) })
		if err != nil {
			t.Errorf("Write: %v", err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestDownloadWhileWriting(t *testing.T) {
	st, _ := openStore(t)
	ids := addJobs(t, st, 0, 20)
	url := serve(t, st.DB())

	var wg sync.WaitGroup
	ctx, stop := context.WithCancel(context.Background())
	busy := make(chan struct{})
	wg.Add(1)
	written := 0
	go func() {
		defer wg.Done()
		for i := 1000; i < 3000 && ctx.Err() == nil; i++ {
			if _, err := st.Submit(ctx, store.Submission{DeliveryID: "w" + strconv.Itoa(i), Action: store.ActionEnqueue,
				Job: &job.Job{Kind: job.KindRun, Repo: job.Repo{Owner: "o", Name: "busy"}, Issue: i, Trigger: job.Trigger{Sender: "s"}}}); err != nil {
				return
			}
			if written++; written == 10 {
				close(busy)
			}
		}
	}()
	select { // the store is being written to when the copy starts
	case <-busy:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not get going")
	}
	file := filepath.Join(t.TempDir(), "backup.db")
	sum, err := Download(context.Background(), SaveOptions{URL: url, File: file})
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 || st.Size() != sum.Bytes {
		t.Fatalf("file %v %v, summary %+v", st, err, sum)
	}
	if sum.Schema == "" || sum.Keys["jobs"] < len(ids) || sum.Path != file {
		t.Fatalf("summary %+v", sum)
	}
	cp, err := store.Open(store.Options{Path: file})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	for _, id := range ids {
		if _, err := cp.Get(context.Background(), id); err != nil {
			t.Fatalf("copy lacks %s: %v", id, err)
		}
	}
	t.Logf("%d jobs written by the concurrent writer; the copy holds %d", written, sum.Keys["jobs"])
}

func TestDownloadRefuses(t *testing.T) {
	st, _ := openStore(t)
	addJobs(t, st, 0, 3)
	good := serve(t, st.DB())
	status := func(code int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		if _, err := Write(r.Context(), st.DB(), &b, nil); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		w.Write(b.Bytes()[:b.Len()/2]) // the connection drops half way
	}))
	defer short.Close()

	dir := t.TempDir()
	existing := filepath.Join(dir, "exists.db")
	os.WriteFile(existing, []byte("keep me"), 0o600)
	tests := []struct {
		name, url, file string
		force           bool
		want            string
		is              error
	}{
		{"server error", status(503, "store unavailable"), filepath.Join(dir, "a.db"), false, "503", nil},
		{"not a store", status(200, strings.Repeat("x", 8192)), filepath.Join(dir, "b.db"), false, "not a selfcode store", ErrNotStore},
		{"truncated", short.URL, filepath.Join(dir, "c.db"), false, "", nil},
		{"existing file", good, existing, false, "already exists", nil},
		{"no file name", good, "", false, "empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Download(context.Background(), SaveOptions{URL: tt.url, File: tt.file, Force: tt.force})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Download = %v, want an error with %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v is not %v", err, tt.is)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Error("an existing file was replaced without force")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("failed downloads left files: %v", ents)
	}
	if _, err := Download(context.Background(), SaveOptions{URL: good, File: existing, Force: true}); err != nil {
		t.Fatalf("force: %v", err)
	}
}

func TestCopyOffline(t *testing.T) {
	st, path := openStore(t)
	ids := addJobs(t, st, 0, 5)
	out := filepath.Join(t.TempDir(), "offline.db")
	// bbolt's lock: a running store cannot be opened a second time.
	if _, err := Copy(context.Background(), path, out, false, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "is the server running") {
		t.Fatalf("Copy of an open store: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := Copy(context.Background(), path, out, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Keys["jobs"] != len(ids) {
		t.Fatalf("copy has %d jobs, want %d", sum.Keys["jobs"], len(ids))
	}
}

// pausingWriter holds the copy after its first chunk until the writer has
// committed `more` transactions, so the snapshot is taken while writes land.
type pausingWriter struct {
	w       io.Writer
	commits <-chan int
	more    int
	paused  bool
	t       *testing.T
}

func (p *pausingWriter) Write(b []byte) (int, error) {
	if !p.paused {
		p.paused = true
		deadline := time.After(20 * time.Second)
		for range p.more {
			select {
			case <-p.commits:
			case <-deadline:
				p.t.Error("the writer did not commit while the copy was open")
				return 0, errors.New("writer stalled")
			}
		}
	}
	return p.w.Write(b)
}

// TestWriteIsASnapshot: writes that commit while the copy is streaming are
// not in it, and everything before it is (keys are a gap-free prefix).
func TestWriteIsASnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.db")
	// A large initial map, so writers never wait for the open reader to remap.
	db, err := bolt.Open(path, 0o600, &bolt.Options{InitialMmapSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(i int) error {
		return db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("jobs"))
			if err != nil {
				return err
			}
			m, err := tx.CreateBucketIfNotExists([]byte("meta"))
			if err != nil {
				return err
			}
			if err := m.Put([]byte("schema"), []byte("test")); err != nil {
				return err
			}
			return b.Put([]byte(fmt.Sprintf("%08d", i)), bytes.Repeat([]byte{'x'}, 200))
		})
	}
	for i := range 50 {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
	commits := make(chan int, 10000)
	stop := make(chan struct{})
	total := make(chan int)
	go func() {
		i := 50
		defer func() { total <- i }()
		for ; i < 5000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := put(i); err != nil {
				t.Error(err)
				return
			}
			commits <- i
		}
	}()
	var buf bytes.Buffer
	if _, err := Write(context.Background(), db, &pausingWriter{w: &buf, commits: commits, more: 30, t: t}, nil); err != nil {
		t.Fatal(err)
	}
	close(stop)
	written := <-total

	file := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := Verify(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	n := sum.Keys["jobs"]
	if n < 50 || n > written-30 {
		t.Fatalf("snapshot holds %d keys; %d were written in all, 30 of them while it streamed", n, written)
	}
	snap, err := bolt.Open(file, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := snap.View(func(tx *bolt.Tx) error {
		i := 0
		return tx.Bucket([]byte("jobs")).ForEach(func(k, _ []byte) error {
			if want := fmt.Sprintf("%08d", i); string(k) != want {
				return fmt.Errorf("key %s where %s belongs: not a prefix", k, want)
			}
			i++
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
}
