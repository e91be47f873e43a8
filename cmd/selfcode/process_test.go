package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fixtures"
	"github.com/selfcode/selfcode/internal/poll"
)

const testSecret = e2e.Secret

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// testBinary builds selfcode with the recording test runner once per run.
func testBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "selfcode-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "selfcode")
		out, err := exec.Command("go", "build", "-tags", "selfcode_testhooks", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type proc struct {
	cmd    *exec.Cmd
	addr   string
	admin  string
	exited chan struct{}
	logs   *bytes.Buffer
	logMu  *sync.Mutex
	runs   string
}

// start runs `selfcode serve` on dataDir and waits for its "serving" log line.
func start(t *testing.T, dataDir string, env ...string) *proc {
	t.Helper()
	runs := filepath.Join(dataDir, "runs.log")
	return launch(t, []string{"serve"}, append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"SELFCODE_WEBHOOK_SECRET=" + testSecret, "SELFCODE_DATA_DIR=" + dataDir,
		"SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0",
		"SELFCODE_TEST_RUNS=" + runs, "SELFCODE_SHUTDOWN_TIMEOUT=5s",
	}, env...), runs)
}

// launch runs the test binary with args and exactly env, follows its JSON
// log and waits (bounded) until it serves.
func launch(t *testing.T, args, env []string, runs string) *proc {
	t.Helper()
	p := &proc{exited: make(chan struct{}), logs: &bytes.Buffer{}, logMu: &sync.Mutex{}, runs: runs}
	p.cmd = exec.Command(testBinary(t), args...)
	p.cmd.Env = env
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Bytes()
			p.logMu.Lock()
			p.logs.Write(line)
			p.logs.WriteByte('\n')
			p.logMu.Unlock()
			var raw map[string]any
			if json.Unmarshal(line, &raw) == nil && raw["msg"] == "selfcode serving" && !signalled {
				p.addr, _ = raw["addr"].(string)
				p.admin, _ = raw["admin_addr"].(string)
				signalled = true
				close(ready)
			}
		}
		p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-ready:
	case <-p.exited:
		t.Fatalf("selfcode exited before serving:\n%s", p.logText())
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("selfcode did not start:\n%s", p.logText())
	}
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) logText() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.logs.String()
}

func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *proc) term(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("selfcode did not stop on SIGTERM")
	}
}

var client = &http.Client{Timeout: 30 * time.Second}

// deliver posts a webhook signed with the test secret.
func (p *proc) deliver(event, id string, body []byte) (int, map[string]any, error) {
	return e2e.Deliver("http://"+p.addr+"/webhook", []byte(testSecret), event, id, body)
}

type apiJob struct {
	ID, State, Outcome string
	Attempts           int
	Time               []struct {
		Part    string
		Seconds float64
	}
}

func (p *proc) allJobs(t *testing.T) []apiJob {
	t.Helper()
	var all []apiJob
	cursor := ""
	for page := 0; page < 100; page++ {
		resp, err := client.Get(fmt.Sprintf("http://%s/api/jobs?limit=1000&cursor=%s", p.admin, cursor))
		if err != nil {
			t.Fatal(err)
		}
		var pg struct {
			Jobs []apiJob
			Next string
		}
		err = json.NewDecoder(resp.Body).Decode(&pg)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, pg.Jobs...)
		if pg.Next == "" {
			return all
		}
		cursor = pg.Next
	}
	t.Fatal("too many pages")
	return nil
}

// commandPayload is a command on an issue of the sample repository, by
// the sender of GitHub's published example (Codertocat).
func commandPayload(t *testing.T, issue int, text string) []byte {
	t.Helper()
	return e2e.CommentPayload(e2e.Repo, issue, int64(1000+issue), "Codertocat", text)
}

func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// The crash test: kill -9 while jobs are leased, restart on the same data
// directory, and every job finishes exactly once.
func TestCrashRestartFinishesEveryJobOnce(t *testing.T) {
	data := t.TempDir()
	p := start(t, data, "SELFCODE_WORKERS=2", "SELFCODE_TEST_GATE="+filepath.Join(data, "gate"))

	const n = 6
	ids := map[string]bool{}
	for i := 1; i <= n; i++ {
		code, out, err := p.deliver("issue_comment", fmt.Sprint("crash-", i), commandPayload(t, i, "/selfcode do it"))
		if err != nil || code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d %v %v", i, code, out, err)
		}
		ids[out["job_id"].(string)] = true
	}
	// Two jobs are leased and blocked at the gate.
	poll.Until(t, "two leased jobs", 20*time.Second, func() bool {
		return strings.Count(strings.Join(readLines(p.runs), "\n"), "start ") >= 2
	})
	p.kill()

	if err := os.WriteFile(filepath.Join(data, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p = start(t, data, "SELFCODE_WORKERS=2", "SELFCODE_TEST_GATE="+filepath.Join(data, "gate"))
	// Redelivering after the restart changes nothing.
	for i := 1; i <= n; i++ {
		code, out, _ := p.deliver("issue_comment", fmt.Sprint("crash-", i), commandPayload(t, i, "/selfcode do it"))
		if code != http.StatusOK || out["duplicate"] != true {
			t.Fatalf("redelivery %d after restart: %d %v", i, code, out)
		}
	}
	poll.Until(t, "every job to finish", 30*time.Second, func() bool {
		for _, j := range p.allJobs(t) {
			if j.State != "succeeded" {
				return false
			}
		}
		return true
	})
	jobs := p.allJobs(t)
	if len(jobs) != n {
		t.Fatalf("%d jobs stored, want %d", len(jobs), n)
	}
	finishes := map[string]int{}
	restarted := 0
	for _, l := range readLines(p.runs) {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "finish" {
			finishes[f[1]]++
		}
		if len(f) == 3 && f[0] == "start" && f[2] == "2" {
			restarted++
		}
	}
	for id := range ids {
		if finishes[id] != 1 {
			t.Errorf("job %s finished %d times", id, finishes[id])
		}
	}
	if restarted < 2 {
		t.Errorf("%d jobs ran a second attempt, want the 2 killed mid-run", restarted)
	}
	p.term(t)
	if !strings.Contains(p.logText(), `"msg":"stopped"`) {
		t.Errorf("no clean stop after SIGTERM:\n%s", p.logText())
	}
}

// The burst test: 5,000 signed deliveries from 50 concurrent clients, 10% of
// them redeliveries: every one answered, exactly the right number of jobs,
// none lost after a kill and restart.
func TestBurstDeliveries(t *testing.T) {
	if testing.Short() {
		t.Skip("burst test in -short mode")
	}
	data := t.TempDir()
	// Kill switch on: jobs are stored and wait, so counting them is exact.
	p := start(t, data, "SELFCODE_ENABLED=false")
	const total, clients = 5000, 50
	const unique = total * 9 / 10
	base := commandPayload(t, 1, "/selfcode burst")
	bodies := make([][]byte, unique)
	for i := range bodies {
		bodies[i] = fixtures.MustSet(fixtures.MustSet(base, "issue.number", i+1), "comment.id", i+1)
	}
	type result struct {
		code int
		dup  bool
		err  error
	}
	results := make([]result, total)
	var wg sync.WaitGroup
	work := make(chan int)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				k := i
				if i >= unique {
					k = (i - unique) * 9 // redeliver an earlier id, same body
				}
				code, out, err := p.deliver("issue_comment", fmt.Sprint("burst-", k), bodies[k])
				results[i] = result{code: code, dup: out["duplicate"] == true, err: err}
			}
		}()
	}
	for i := 0; i < total; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	accepted, dups := 0, 0
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("delivery %d: %v", i, r.err)
		case r.code == http.StatusAccepted:
			accepted++
		case r.code == http.StatusOK && r.dup:
			dups++
		default:
			t.Fatalf("delivery %d: status %d", i, r.code)
		}
	}
	if accepted != unique || dups != total-unique {
		t.Fatalf("accepted %d duplicates %d, want %d and %d", accepted, dups, unique, total-unique)
	}
	p.kill()
	p = start(t, data, "SELFCODE_ENABLED=false")
	jobs := p.allJobs(t)
	if len(jobs) != unique {
		t.Fatalf("%d jobs after restart, want %d", len(jobs), unique)
	}
	for _, j := range jobs {
		if j.State != "queued" {
			t.Fatalf("job %s is %s with the kill switch on", j.ID, j.State)
		}
	}
}
