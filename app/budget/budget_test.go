package budget

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
)

type comments struct {
	mu   sync.Mutex
	list []string
}

func (c *comments) Comment(ctx context.Context, j *job.Job, body string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, j.Key()+": "+body)
	return nil
}

func TestAdmitAndRecord(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	now := time.Date(2026, 11, 21, 22, 30, 0, 0, time.UTC) // 23:30 in Berlin
	cs := &comments{}
	b, err := New(Options{Ledger: st, Limit: 1000, Location: berlin, Now: func() time.Time { return now }, Issues: cs})
	if err != nil {
		t.Fatal(err)
	}
	j := &job.Job{ID: "j1", Repo: job.Repo{Owner: "o", Name: "r"}, Issue: 7, InstallationID: 42}
	other := &job.Job{ID: "j2", Repo: job.Repo{Owner: "o", Name: "r"}, Issue: 8, InstallationID: 43}

	tests := []struct {
		name      string
		record    int // tokens a finished run used before the check
		j         *job.Job
		wantWait  bool
		wantNotes int
	}{
		{"fresh budget", 0, j, false, 0},
		{"below the limit", 999, j, false, 0},
		{"limit reached", 1, j, true, 1},
		{"asked again the same day: no second comment", 0, j, true, 1},
		{"another installation is not affected", 0, other, false, 1},
	}
	for _, tt := range tests {
		if tt.record > 0 {
			b.Record(ctx, j, &job.Job{ID: "done", InstallationID: 42, Tokens: tt.record})
		}
		until, reason, err := b.Admit(ctx, tt.j)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if wait := !until.IsZero(); wait != tt.wantWait {
			t.Fatalf("%s: wait %v (until %v, %q)", tt.name, wait, until, reason)
		}
		if tt.wantWait {
			if want := time.Date(2026, 11, 22, 0, 0, 0, 0, berlin); !until.Equal(want) {
				t.Fatalf("%s: until %v, want %v (next midnight in Berlin)", tt.name, until, want)
			}
			if !strings.Contains(reason, "1000 of 1000") {
				t.Fatalf("%s: reason %q", tt.name, reason)
			}
		}
		cs.mu.Lock()
		n := len(cs.list)
		cs.mu.Unlock()
		if n != tt.wantNotes {
			t.Fatalf("%s: %d comments, want %d: %v", tt.name, n, tt.wantNotes, cs.list)
		}
	}
	if !strings.Contains(cs.list[0], "o/r#7") || !strings.Contains(cs.list[0], "daily model-token budget") {
		t.Fatalf("comment %q", cs.list[0])
	}
	// The next day starts with a fresh budget.
	now = now.Add(time.Hour)
	if until, _, _ := b.Admit(ctx, j); !until.IsZero() {
		t.Fatalf("still waiting on the next day until %v", until)
	}
}

func TestOffByDefault(t *testing.T) {
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, _ := New(Options{Ledger: st})
	j := &job.Job{ID: "j", InstallationID: 1, Tokens: 1 << 30}
	b.Record(context.Background(), j, j)
	if until, _, err := b.Admit(context.Background(), j); err != nil || !until.IsZero() {
		t.Fatalf("budget off but job waits until %v (%v)", until, err)
	}
	if _, err := New(Options{Ledger: st, Limit: -1}); err == nil {
		t.Fatal("negative limit accepted")
	}
}
