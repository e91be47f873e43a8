package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	bolt "go.etcd.io/bbolt"
)

func overnightJob(repo string, issue int, at time.Time) *job.Job {
	j := runJob(issue, "")
	j.Repo.Name = repo
	j.Overnight = true
	j.ScheduledFor = at
	return j
}

func TestPromoteOnePerRepoAndMoveWhenWindowIsOver(t *testing.T) {
	ctx := context.Background()
	s, clk, path := open(t)
	start := clk.Now().Add(time.Hour)
	a1 := submit(t, s, "a1", overnightJob("a", 1, start)).JobID
	a2 := submit(t, s, "a2", overnightJob("a", 2, start)).JobID
	b3 := submit(t, s, "b3", overnightJob("b", 3, start)).JobID
	opts := PromoteOptions{OnePerRepo: true,
		WindowEnd:  func(st time.Time) time.Time { return st.Add(6 * time.Hour) },
		NextWindow: func(t time.Time) time.Time { return start.Add(24 * time.Hour) }}

	p, err := s.Promote(ctx, clk.Now(), opts)
	if err != nil || len(p.Promoted) != 0 {
		t.Fatalf("before the window: %+v %v", p, err)
	}
	clk.Add(time.Hour)
	p, err = s.Promote(ctx, clk.Now(), opts)
	if err != nil || len(p.Promoted) != 2 || p.Promoted[0] != a1 || p.Promoted[1] != b3 {
		t.Fatalf("first promotion %+v %v; want a1 and b3", p, err)
	}
	// a2 waits while a1 is queued, then running.
	if p, _ = s.Promote(ctx, clk.Now(), opts); len(p.Promoted) != 0 {
		t.Fatalf("promoted a second job of repository a: %+v", p)
	}
	got := take(t, s, LanePipeline)
	if got == nil || got.ID != a1 {
		t.Fatalf("leased %+v", got)
	}
	if p, _ = s.Promote(ctx, clk.Now(), opts); len(p.Promoted) != 0 {
		t.Fatalf("promoted while a1 runs: %+v", p)
	}
	if _, err := s.Finish(ctx, a1, Result{State: job.StateSucceeded, Outcome: job.OutcomePROpened}); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.Promote(ctx, clk.Now(), opts); len(p.Promoted) != 1 || p.Promoted[0] != a2 {
		t.Fatalf("after a1 finished: %+v", p)
	}

	// A fourth job, still scheduled when the window is over, moves on.
	c4 := submit(t, s, "c4", overnightJob("c", 4, start)).JobID
	clk.Add(7 * time.Hour)
	p, err = s.Promote(ctx, clk.Now(), opts)
	if err != nil || len(p.Moved) != 1 || p.Moved[0].JobID != c4 || !p.Moved[0].To.Equal(start.Add(24*time.Hour)) {
		t.Fatalf("window over: %+v %v", p, err)
	}
	if j := mustGet(t, s, c4); j.State != job.StateScheduled || !j.ScheduledFor.Equal(start.Add(24*time.Hour)) {
		t.Fatalf("moved job %+v", j)
	}
	// a2 was promoted but never started: moved at close.
	if moved, err := s.MoveToWindow(ctx, a2, start, start.Add(24*time.Hour), ReasonWindowOver); err != nil || !moved {
		t.Fatalf("move a2: %v %v", moved, err)
	}
	if got := take(t, s, LanePipeline); got == nil || got.ID != b3 {
		t.Fatalf("leased %+v, want b3 (a2 moved on)", got)
	}
	if got := take(t, s, LanePipeline); got != nil {
		t.Fatalf("a moved job was leased: %s", got.ID)
	}
	ws, err := s.Windows(ctx, true)
	if err != nil || len(ws) != 1 {
		t.Fatalf("windows %+v %v", ws, err)
	}
	w := ws[0]
	if !w.Start.Equal(start) || len(w.Jobs) != 3 || len(w.Moved) != 2 {
		t.Fatalf("window record %+v", w)
	}
	rep := &Report{Payload: json.RawMessage(`{"runDate":"x"}`)}
	if err := s.CloseWindow(ctx, start, rep); err != nil || rep.ID == "" {
		t.Fatalf("close: %v %+v", err, rep)
	}
	if open, _ := s.Windows(ctx, true); len(open) != 0 {
		t.Fatalf("still open: %+v", open)
	}
	if _, err := s.UpdateReport(ctx, rep.ID, func(r *Report) error { r.Delivered, r.Attempts = true, 2; return nil }); err != nil {
		t.Fatal(err)
	}

	// Everything survives a restart.
	s.Close()
	s2, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if j := mustGet(t, s2, c4); j.State != job.StateScheduled {
		t.Fatalf("after restart %s", j.State)
	}
	list, err := s2.ListReports(ctx, 10)
	if err != nil || len(list) != 1 || !list[0].Delivered || list[0].Attempts != 2 || string(list[0].Payload) != `{"runDate":"x"}` {
		t.Fatalf("reports %+v %v", list, err)
	}
	if _, err := s2.GetReport(ctx, "nope"); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("missing report: %v", err)
	}
}

func TestDeferKeepsTheJobQueuedUntilItsTime(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := open(t)
	id := submit(t, s, "d1", runJob(1, "")).JobID
	other := submit(t, s, "d2", runJob(2, "")).JobID
	j := take(t, s, LanePipeline)
	if j.ID != id || j.Attempts != 1 {
		t.Fatalf("leased %+v", j)
	}
	until := clk.Now().Add(14 * time.Hour)
	d, err := s.Defer(ctx, id, until, "daily token budget used up")
	if err != nil || d.State != job.StateQueued || d.Attempts != 0 {
		t.Fatalf("defer: %+v %v", d, err)
	}
	// The next job runs; the deferred one does not.
	if got := take(t, s, LanePipeline); got == nil || got.ID != other {
		t.Fatalf("leased %+v, want %s", got, other)
	}
	if got := take(t, s, LanePipeline); got != nil {
		t.Fatalf("deferred job leased early: %s", got.ID)
	}
	if ids, _ := s.PromoteDue(ctx, clk.Now()); len(ids) != 0 {
		t.Fatalf("promoted early: %v", ids)
	}
	if _, err := s.Defer(ctx, id, until, "again"); !errs.Is(err, errs.KindConflict) {
		t.Fatalf("defer of a queued job: %v", err)
	}
	clk.Add(15 * time.Hour)
	if ids, _ := s.PromoteDue(ctx, clk.Now()); len(ids) != 1 || ids[0] != id {
		t.Fatalf("promoted %v", ids)
	}
	if got := take(t, s, LanePipeline); got == nil || got.ID != id || got.Attempts != 1 {
		t.Fatalf("leased %+v", got)
	}

	// Canceling a deferred job removes its wait.
	id3 := submit(t, s, "d3", runJob(3, "")).JobID
	take(t, s, LanePipeline)
	if _, err := s.Defer(ctx, id3, clk.Now().Add(time.Hour), "budget"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, id3, "no"); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Hour)
	if ids, _ := s.PromoteDue(ctx, clk.Now()); len(ids) != 0 {
		t.Fatalf("canceled deferred job promoted: %v", ids)
	}
}

func TestUsageAndNotices(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	tests := []struct {
		inst  int64
		day   string
		add   DayUsage
		total DayUsage
	}{
		{1, "2026-11-21", DayUsage{Tokens: 100}, DayUsage{Tokens: 100}},
		{1, "2026-11-21", DayUsage{Tokens: 50, NanoDollars: NanoDollars(0.25)}, DayUsage{Tokens: 150, NanoDollars: 250_000_000}},
		{1, "2026-11-21", DayUsage{NanoDollars: NanoDollars(0.000_000_4)}, DayUsage{Tokens: 150, NanoDollars: 250_000_400}},
		{1, "2026-11-22", DayUsage{Tokens: 7}, DayUsage{Tokens: 7}},
		{2, "2026-11-21", DayUsage{Tokens: 3, NanoDollars: 9}, DayUsage{Tokens: 3, NanoDollars: 9}},
	}
	for _, tt := range tests {
		got, err := s.AddUsage(ctx, tt.inst, tt.day, tt.add)
		if err != nil || got != tt.total {
			t.Fatalf("AddUsage(%d,%s,%+v) = %+v, %v; want %+v", tt.inst, tt.day, tt.add, got, err, tt.total)
		}
	}
	if u, _ := s.Usage(ctx, 1, "2026-11-21"); u.Tokens != 150 || u.Dollars() != 0.2500004 {
		t.Fatalf("usage %+v (%v dollars)", u, u.Dollars())
	}
	if u, _ := s.Usage(ctx, 9, "2026-11-21"); u != (DayUsage{}) {
		t.Fatalf("unknown installation usage %+v", u)
	}
	// A value written before cost was counted (tokens only) still reads.
	if err := s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsage).Put(usageKey(5, "2026-11-21"), u64(42))
	}); err != nil {
		t.Fatal(err)
	}
	if u, err := s.AddUsage(ctx, 5, "2026-11-21", DayUsage{Tokens: 1, NanoDollars: 2}); err != nil || u != (DayUsage{Tokens: 43, NanoDollars: 2}) {
		t.Fatalf("old value: %+v, %v", u, err)
	}
	if has, _ := s.HasNotice(ctx, "o/r#1", "budget"); has {
		t.Fatal("notice before marking")
	}
	s.MarkNotice(ctx, "o/r#1", "budget")
	if has, _ := s.HasNotice(ctx, "o/r#1", "budget"); !has {
		t.Fatal("notice not found after marking")
	}
}
