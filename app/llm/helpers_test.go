package llm_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline/chat"
)

const testKey = "sk-test-not-a-real-key"

var testModels = map[chat.Role]string{
	chat.RolePlanner:  "planner-model",
	chat.RoleEditor:   "editor-model",
	chat.RoleFixer:    "fixer-model",
	chat.RoleReporter: "reporter-model",
}

var testRoles = map[string]string{
	"planner-model":  string(chat.RolePlanner),
	"editor-model":   string(chat.RoleEditor),
	"fixer-model":    string(chat.RoleFixer),
	"reporter-model": string(chat.RoleReporter),
}

// newFake starts a fake with the test role mapping and closes it at cleanup.
func newFake(t *testing.T, opts fakeopenai.Options) *fakeopenai.Server {
	t.Helper()
	if opts.Roles == nil {
		opts.Roles = testRoles
	}
	srv, err := fakeopenai.New(opts)
	if err != nil {
		t.Fatalf("fakeopenai.New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close fake: %v", err)
		}
	})
	return srv
}

// sleeps records the waits a Client asks for without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newClient builds a Client against url with fast, recorded retries;
// edit adjusts the options first.
func newClient(t *testing.T, url string, edit func(*llm.Options)) (*llm.Client, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	opts := llm.Options{
		BaseURL:     url,
		APIKey:      testKey,
		Models:      testModels,
		HTTPTimeout: 10 * time.Second,
		MaxRetries:  3,
		Backoff:     llm.Backoff{Base: 100 * time.Millisecond, Max: time.Second},
		Sleep:       sl.sleep,
	}
	if edit != nil {
		edit(&opts)
	}
	c, err := llm.New(opts)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return c, sl
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawBody decodes a recorded request body into a generic map.
func rawBody(t *testing.T, r fakeopenai.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Raw, &m); err != nil {
		t.Fatalf("request %d body: %v", r.Seq, err)
	}
	return m
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("json %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("json %s: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

func userRequest(role chat.Role, text string) chat.Request {
	return chat.Request{Role: role, Messages: []chat.Message{
		{Role: chat.System, Content: "You are a careful engineer."},
		{Role: chat.User, Content: text},
	}}
}
