package server_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/gctune"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fixtures"
)

// intakeSenders deliver at once, as GitHub does when many comments arrive.
const intakeSenders = 64

// BenchmarkIntakeAgainstReference compares, over HTTP on loopback,
// accepted /selfcode deliveries per second of the whole selfcode server
// (workers held by the kill switch, so only intake runs) with a minimal
// reference intake on the same machine in the same run: net/http, the HMAC
// check, a minimal decode and one bbolt Batch put with delivery-id dedupe,
// durable before its 202 as selfcode's is. b.N deliveries go to each,
// alternately in rounds, from intakeSenders senders; it reports both rates,
// their ratio and the latency percentiles.
func BenchmarkIntakeAgainstReference(b *testing.B) {
	gctune.Apply() // as the selfcode binary does; both intakes share the process
	h := e2e.Start(b, e2e.Options{Env: []string{"SELFCODE_ENABLED=false"}})
	ref := referenceIntake(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: intakeSenders, MaxConnsPerHost: intakeSenders}}
	payloads := make([][]byte, b.N)
	sigs := make([]string, b.N)
	for i := range payloads {
		payloads[i] = e2e.CommentPayload(e2e.Repo, i+1, int64(i+1), "maint", "/selfcode make the greeting configurable")
		sigs[i] = fixtures.Sign([]byte(e2e.Secret), payloads[i])
	}
	b.ResetTimer()
	var sc, rf intakeRun
	const rounds = 6
	for r := 0; r < rounds; r++ {
		lo, hi := r*b.N/rounds, (r+1)*b.N/rounds
		rf.add(deliverAll(b, client, ref, "ref", payloads[lo:hi], sigs[lo:hi]))
		sc.add(deliverAll(b, client, h.URL(), "sc", payloads[lo:hi], sigs[lo:hi]))
	}
	b.StopTimer()
	b.ReportMetric(sc.rate(), "selfcode-deliveries/s")
	b.ReportMetric(rf.rate(), "reference-deliveries/s")
	b.ReportMetric(sc.rate()/rf.rate(), "ratio")
	b.ReportMetric(sc.percentile(0.50), "selfcode-p50-ms")
	b.ReportMetric(sc.percentile(0.99), "selfcode-p99-ms")
	b.ReportMetric(rf.percentile(0.99), "reference-p99-ms")
}

// intakeRun is what one side's deliveries took.
type intakeRun struct {
	n         int
	elapsed   time.Duration
	latencies []time.Duration
}

func (r *intakeRun) add(o intakeRun) {
	r.n += o.n
	r.elapsed += o.elapsed
	r.latencies = append(r.latencies, o.latencies...)
}

func (r *intakeRun) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.n) / r.elapsed.Seconds()
}

func (r *intakeRun) percentile(p float64) float64 {
	if len(r.latencies) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r.latencies...)
	sort.Slice(s, func(a, c int) bool { return s[a] < s[c] })
	return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000
}

// deliverAll sends the payloads from intakeSenders senders and fails on
// any answer but 202.
func deliverAll(b *testing.B, client *http.Client, url, prefix string, payloads [][]byte, sigs []string) intakeRun {
	b.Helper()
	var next atomic.Int64
	lat := make([]time.Duration, len(payloads))
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for s := 0; s < intakeSenders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(payloads) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(payloads[i]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "issue_comment")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%d-%s", prefix, i, sigs[i][7:19]))
				req.Header.Set("X-Hub-Signature-256", sigs[i])
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						err = fmt.Errorf("%s: status %d", url, resp.StatusCode)
					}
				}
				lat[i] = time.Since(t0)
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	run := intakeRun{n: len(payloads), elapsed: time.Since(start), latencies: lat}
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	return run
}

// referenceIntake serves the minimal intake on loopback and returns its
// URL.
func referenceIntake(b *testing.B) string {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "reference.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	db.MaxBatchDelay = 3 * time.Millisecond
	b.Cleanup(func() { db.Close() })
	bucket := []byte("deliveries")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
		b.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 25<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		mac := hmac.New(sha256.New, []byte(e2e.Secret))
		mac.Write(body)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Hub-Signature-256"))) {
			http.Error(w, "signature", http.StatusUnauthorized)
			return
		}
		var p struct {
			Action  string `json:"action"`
			Comment struct {
				Body string `json:"body"`
			} `json:"comment"`
			Issue struct {
				Number int `json:"number"`
			} `json:"issue"`
			Repository struct {
				FullName string `json:"full_name"`
			} `json:"repository"`
		}
		if err := json.Unmarshal(body, &p); err != nil || !strings.HasPrefix(p.Comment.Body, "/selfcode") {
			http.Error(w, "payload", http.StatusBadRequest)
			return
		}
		rec, _ := json.Marshal(map[string]any{"repository": p.Repository.FullName, "issue": p.Issue.Number, "instructions": p.Comment.Body})
		id := []byte(r.Header.Get("X-GitHub-Delivery"))
		dup := false
		err = db.Batch(func(tx *bolt.Tx) error {
			bk := tx.Bucket(bucket)
			if dup = bk.Get(id) != nil; dup {
				return nil
			}
			return bk.Put(id, rec)
		})
		if err != nil {
			http.Error(w, "store", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"job_id":"x"}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/webhook"
}
