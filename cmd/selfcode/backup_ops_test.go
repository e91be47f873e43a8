package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/poll"
)

// storedIDs opens a store file (no server may hold it) and lists its jobs.
func storedIDs(t *testing.T, path string) []string {
	t.Helper()
	st, err := store.Open(store.Options{Path: path, OpenTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []string
	cursor := ""
	for range 100 {
		jobs, next, err := st.List(context.Background(), store.ListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	sort.Strings(ids)
	return ids
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBackupWhileServingAndRestore: `selfcode backup` copies the live store
// while webhooks keep creating jobs and workers keep running them; the copy
// holds every job accepted before it started; restoring it (stop, replace
// selfcode.db, start) brings exactly those jobs back.
func TestBackupWhileServingAndRestore(t *testing.T) {
	data := t.TempDir()
	p := start(t, data)
	dir := t.TempDir()

	var mu sync.Mutex
	var accepted []string
	stop := make(chan struct{})
	busy := make(chan struct{})
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		for i := 1; i <= 2000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			code, out, err := p.deliver("issue_comment", fmt.Sprintf("bk-%d", i), commandPayload(t, i, "/selfcode backup test"))
			if err != nil || code != http.StatusAccepted {
				t.Errorf("delivery %d: %d %v", i, code, err)
				return
			}
			mu.Lock()
			accepted = append(accepted, out["job_id"].(string))
			n := len(accepted)
			mu.Unlock()
			if n == 20 {
				close(busy)
			}
		}
	}()
	select {
	case <-busy:
	case <-delivered:
		t.Fatal("deliveries stopped early")
	case <-time.After(60 * time.Second):
		t.Fatal("deliveries too slow")
	}

	admin := "http://" + p.admin
	mu.Lock()
	before := append([]string(nil), accepted...)
	mu.Unlock()
	file := filepath.Join(dir, "selfcode-backup.db")
	out, code := runCLI(t, nil, "backup", file, "--admin-url", admin)
	mu.Lock()
	duringOrAfter := len(accepted)
	mu.Unlock()
	if code != 0 || !strings.Contains(out, "Backed up") || !strings.Contains(out, "consistency check passed") {
		t.Fatalf("backup: exit %d\n%s", code, out)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file %v %v, want mode 0600", st, err)
	}

	// More deliveries after the copy, so the restore can be told apart.
	poll.Until(t, "deliveries after the backup", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= duringOrAfter+5
	})
	close(stop)
	<-delivered

	copied := storedIDs(t, file)
	has := map[string]bool{}
	for _, id := range copied {
		has[id] = true
	}
	for _, id := range before {
		if !has[id] {
			t.Fatalf("the backup lacks job %s accepted before it started", id)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("Backed up %d jobs", len(copied))) {
		t.Errorf("output %q does not count the %d jobs", out, len(copied))
	}
	t.Logf("%d jobs accepted before the backup, %d in it, %d accepted in all", len(before), len(copied), len(accepted))

	restoreFrom := filepath.Join(dir, "restore-me.db")
	copyFile(t, file, restoreFrom)
	restored := storedIDs(t, restoreFrom)

	// No silent overwrite; --force replaces.
	if out, code := runCLI(t, nil, "backup", file, "--admin-url", admin); code != 1 || !strings.Contains(out, "already exists") {
		t.Fatalf("backup over an existing file: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, nil, "backup", file, "--admin-url", admin, "--force"); code != 0 {
		t.Fatalf("backup --force: exit %d\n%s", code, out)
	}
	// The live file is locked by the server; --db says so.
	db := filepath.Join(data, "selfcode.db")
	if out, code := runCLI(t, nil, "backup", filepath.Join(dir, "direct.db"), "--db", db); code != 1 || !strings.Contains(out, "is the server running") {
		t.Fatalf("backup --db of a served store: exit %d\n%s", code, out)
	}

	// Restore: stop, replace selfcode.db, start.
	p.term(t)
	if out, code := runCLI(t, nil, "backup", filepath.Join(dir, "offline.db"), "--db", db); code != 0 {
		t.Fatalf("offline backup: exit %d\n%s", code, out)
	}
	if len(storedIDs(t, db)) <= len(restored) {
		t.Fatal("the live store did not grow after the backup; the restore check would prove nothing")
	}
	copyFile(t, restoreFrom, db)
	p2 := start(t, data)
	var got []string
	for _, j := range p2.allJobs(t) {
		got = append(got, j.ID)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(restored, ",") {
		t.Fatalf("after restore the server has %d jobs, the backup %d", len(got), len(restored))
	}
}
