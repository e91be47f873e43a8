package handlers

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/gctune"
	"github.com/selfcode/selfcode/app/intake"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/fixtures"
)

// benchParallelism × GOMAXPROCS goroutines deliver at once, like many
// GitHub deliveries arriving together.
const benchParallelism = 25

type signed struct {
	body []byte
	sig  string
}

// generator makes unique signed deliveries from GitHub's published payload:
// every delivery is a new comment on a new issue (selfcode turns a comment
// into a job once). Both benchmarks pay the same generation cost.
type generator struct{ base []byte }

const (
	issueSentinel   = "987654321"
	commentSentinel = "876543219"
)

func newGenerator(b *testing.B) generator {
	b.Helper()
	base, err := fixtures.Payload("issue_comment.created.with-installation.json")
	if err != nil {
		b.Fatal(err)
	}
	base = fixtures.MustSet(base, "comment.body", "/selfcode make the greeting configurable")
	base = fixtures.MustSet(base, "issue.number", 987654321)
	base = fixtures.MustSet(base, "comment.id", 876543219)
	return generator{base: base}
}

func (g generator) make(i int64) signed {
	n := []byte(strconv.FormatInt(i+1, 10))
	body := bytes.Replace(g.base, []byte(issueSentinel), n, 1)
	body = bytes.Replace(body, []byte(commentSentinel), n, 1)
	return signed{body: body, sig: fixtures.Sign(secret, body)}
}

func benchEngine(b *testing.B) (http.Handler, *store.Store) {
	b.Helper()
	st, err := store.Open(store.Options{Path: filepath.Join(b.TempDir(), "selfcode.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	eng, err := NewPublic(PublicOptions{Webhook: WebhookOptions{Secret: secret, Router: intake.New(intake.Options{}), Store: st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		b.Fatal(err)
	}
	return eng, st
}

func deliverTo(h http.Handler, s signed, id string) int {
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(s.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", s.sig)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// BenchmarkIntake: durable deliveries per second through the real webhook
// handler (signature check, parse, route) and the bbolt store (fsync'd).
func BenchmarkIntake(b *testing.B) {
	gctune.Apply() // as the selfcode binary does
	h, _ := benchEngine(b)
	gen := newGenerator(b)
	var n atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if code := deliverTo(h, gen.make(i), fmt.Sprint("bench-", i)); code != http.StatusAccepted {
				b.Errorf("status %d", code)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkBareBatch: the same bytes put with bbolt's DB.Batch at the same
// concurrency, the ceiling intake is measured against.
func BenchmarkBareBatch(b *testing.B) {
	gctune.Apply() // the same GC setting as the intake benchmark
	db, err := bolt.Open(filepath.Join(b.TempDir(), "bare.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.MaxBatchDelay = 3 * time.Millisecond // the same window the store uses
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		b.Fatal(err)
	}
	gen := newGenerator(b)
	var n atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			key := []byte(fmt.Sprint("bench-", i))
			val := gen.make(i).body
			if err := db.Batch(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put(key, val) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}

// BenchmarkIntakeLatencyAt1000: an open-loop load of 1,000 deliveries per
// second (each started on its own schedule, never waiting for the previous
// one) for the benchmark's duration; reports p50/p99/max handler latency.
func BenchmarkIntakeLatencyAt1000(b *testing.B) {
	gctune.Apply()
	h, _ := benchEngine(b)
	const rate = 1000
	total := b.N
	if total < 2000 {
		total = 2000 // at least two seconds of load
	}
	gen := newGenerator(b)
	lat := make([]time.Duration, total)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	for i := 0; i < total; i++ {
		<-tick.C
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d := gen.make(int64(i))
			t0 := time.Now()
			if code := deliverTo(h, d, fmt.Sprint("lat-", i)); code != http.StatusAccepted {
				b.Errorf("status %d", code)
			}
			lat[i] = time.Since(t0)
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(total)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
