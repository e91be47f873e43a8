package budget

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
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

func TestAdmit(t *testing.T) {
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
		record    int // tokens a model call used before the check
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
			b.Job(j).Spend(ctx, pipeline.Charge{Role: chat.RoleEditor, Usage: chat.Usage{Total: tt.record}})
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
	st := openStore(t)
	b, _ := New(Options{Ledger: st})
	j := &job.Job{ID: "j", InstallationID: 1}
	jb := b.Job(j)
	jb.Spend(context.Background(), pipeline.Charge{Usage: chat.Usage{Total: 1 << 30}, Cost: 1e6, Priced: true})
	if until, _, err := b.Admit(context.Background(), j); err != nil || !until.IsZero() {
		t.Fatalf("budget off but job waits until %v (%v)", until, err)
	}
	if err := jb.Allow(context.Background()); err != nil {
		t.Fatalf("budget off but a call is refused: %v", err)
	}
	if u, _ := st.Usage(context.Background(), 1, b.Day(time.Now())); u.Tokens != 1<<30 || u.Dollars() != 1e6 {
		t.Fatalf("use is still counted: %+v", u)
	}
	if _, err := New(Options{Ledger: st, Limit: -1}); err == nil {
		t.Fatal("negative limit accepted")
	}
	if _, err := New(Options{Ledger: st, CostLimit: -1}); err == nil {
		t.Fatal("negative cost limit accepted")
	}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestEveryCallChecksTheDay: two jobs of one installation running at once
// are each refused their next call once their calls together used the
// day's tokens or dollars; another installation is not; calls to a model
// without a price count tokens only; the next day starts afresh.
func TestEveryCallChecksTheDay(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		o         Options
		charges   []pipeline.Charge // alternately by job a and job b
		wantLimit chat.Limit
		detail    string
	}{
		{"tokens", Options{Limit: 1000}, []pipeline.Charge{{Usage: chat.Usage{Total: 600}}, {Usage: chat.Usage{Total: 400}}},
			chat.LimitDailyTokens, "1000 of 1000 tokens on 2026-05-04"},
		{"tokens not yet", Options{Limit: 1000}, []pipeline.Charge{{Usage: chat.Usage{Total: 600}}, {Usage: chat.Usage{Total: 399}}}, "", ""},
		{"dollars", Options{CostLimit: 1}, []pipeline.Charge{{Usage: chat.Usage{Total: 10}, Cost: 0.6, Priced: true}, {Usage: chat.Usage{Total: 10}, Cost: 0.4, Priced: true}},
			chat.LimitDailyCost, "$1.00 of $1.00 on 2026-05-04"},
		{"unpriced calls cost nothing toward the cost budget", Options{CostLimit: 1},
			[]pipeline.Charge{{Usage: chat.Usage{Total: 1 << 20}, Cost: 5}, {Usage: chat.Usage{Total: 1 << 20}, Cost: 5}}, "", ""},
		{"tokens first when both are spent", Options{Limit: 10, CostLimit: 1},
			[]pipeline.Charge{{Usage: chat.Usage{Total: 10}, Cost: 1, Priced: true}}, chat.LimitDailyTokens, "10 of 10 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Ledger, o.Now = openStore(t), func() time.Time { return now }
			b, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			jobs := []*Job{b.Job(&job.Job{ID: "a", InstallationID: 7}), b.Job(&job.Job{ID: "b", InstallationID: 7})}
			var wg sync.WaitGroup
			for i, c := range tt.charges {
				wg.Go(func() { jobs[i%2].Spend(ctx, c) })
			}
			wg.Wait()
			for _, jb := range jobs {
				err := jb.Allow(ctx)
				var be *chat.BudgetError
				if tt.wantLimit == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					continue
				}
				if !errors.As(err, &be) || be.Limit != tt.wantLimit || !strings.Contains(be.Detail, tt.detail) || !errors.Is(err, chat.ErrBudgetExhausted) {
					t.Fatalf("Allow = %v, want %s with %q", err, tt.wantLimit, tt.detail)
				}
			}
			if err := b.Job(&job.Job{ID: "c", InstallationID: 8}).Allow(ctx); err != nil {
				t.Fatalf("another installation refused: %v", err)
			}
			tomorrow := *b
			tomorrow.o.Now = func() time.Time { return now.Add(24 * time.Hour) }
			if err := tomorrow.Job(&job.Job{ID: "a", InstallationID: 7}).Allow(ctx); err != nil {
				t.Fatalf("refused the next day: %v", err)
			}
		})
	}
}

func TestAdmitWaitsForTheCostBudget(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	now := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	cs := &comments{}
	b, _ := New(Options{Ledger: st, CostLimit: 2, Now: func() time.Time { return now }, Issues: cs})
	j := &job.Job{ID: "j1", Repo: job.Repo{Owner: "o", Name: "r"}, Issue: 3, InstallationID: 9}
	b.Job(j).Spend(ctx, pipeline.Charge{Usage: chat.Usage{Total: 5}, Cost: 2.5, Priced: true})
	until, reason, err := b.Admit(ctx, j)
	if err != nil || until.IsZero() || !strings.Contains(reason, "daily cost budget") || !strings.Contains(reason, "$2.50 of $2.00") {
		t.Fatalf("until %v reason %q err %v", until, reason, err)
	}
	if len(cs.list) != 1 || !strings.Contains(cs.list[0], "SELFCODE_DAILY_COST_BUDGET") {
		t.Fatalf("comments %v", cs.list)
	}
}
