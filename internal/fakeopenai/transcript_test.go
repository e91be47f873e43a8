package fakeopenai_test

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline/chat"
)

func loadTestTranscript(t *testing.T) *fakeopenai.Transcript {
	t.Helper()
	f, err := os.Open("testdata/transcript.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := fakeopenai.LoadTranscript(f)
	if err != nil {
		t.Fatalf("LoadTranscript: %v", err)
	}
	return tr
}

func TestLoadTranscript(t *testing.T) {
	tr := loadTestTranscript(t)
	if len(tr.Steps) != 5 {
		t.Fatalf("steps = %d, want 5", len(tr.Steps))
	}
	if got := tr.Steps[1].ToolCalls[0]; got.ID != "call_view_1" || got.Arguments != `{"path":"main.go"}` {
		t.Errorf("object arguments = %+v", got)
	}
	if got := tr.Steps[2].ToolCalls[0].Arguments; !strings.HasPrefix(got, `{"path":"main.go","old_str":"func main() {"`) {
		t.Errorf("string arguments = %s", got)
	}
	if tr.Steps[2].Delay != fakeopenai.Duration(50*time.Millisecond) {
		t.Errorf("delay = %v", time.Duration(tr.Steps[2].Delay))
	}
}

func TestTranscriptSaveLoadRoundTrip(t *testing.T) {
	tr := loadTestTranscript(t)
	// Arguments that are not a compact object must survive as written.
	tr.Steps = append(tr.Steps,
		fakeopenai.Step{Role: "editor", ToolCalls: []fakeopenai.ToolCall{
			{Name: "view", Arguments: `{"path": "spaced.go"}`},
			{Name: "create", Arguments: `{"path":"a.html","content":"<p>&amp;</p>"}`},
			{Name: "view", Arguments: `{"path": broken`},
		}},
		fakeopenai.Step{Status: 429, RetryAfter: "2", Message: "slow down"},
		fakeopenai.Step{RawBody: "garbage"},
	)
	var buf bytes.Buffer
	if err := tr.Save(&buf); err != nil {
		t.Fatalf("Save: %v", err)
	}
	back, err := fakeopenai.LoadTranscript(&buf)
	if err != nil {
		t.Fatalf("LoadTranscript: %v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(back, tr) {
		t.Errorf("round trip changed the transcript:\n got %+v\nwant %+v", back, tr)
	}
}

func TestLoadTranscriptErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"not JSON", `steps`, "decode transcript"},
		{"unknown field", `{"steps":[{"contnet":"typo"}]}`, "unknown field"},
		{"invalid step", `{"steps":[{"content":"x"},{"status":500,"content":"y"}]}`, "step 1"},
		{"bad delay", `{"steps":[{"delay":"soon"}]}`, "duration"},
		{"negative delay", `{"steps":[{"delay":"-1s"}]}`, "negative"},
		{"arguments of the wrong type", `{"steps":[{"tool_calls":[{"name":"view","arguments":[1]}]}]}`, "want an object or a string"},
		{"trailing data", `{"steps":[]} {"steps":[]}`, "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fakeopenai.LoadTranscript(strings.NewReader(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadTranscript(%s) = %v, want an error containing %q", tt.json, err, tt.want)
			}
		})
	}
}

func FuzzLoadTranscript(f *testing.F) {
	seed, err := os.ReadFile("testdata/transcript.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"steps":[{"tool_calls":[{"name":"x","arguments":"{\"a\": 1}"}]}]}`))
	f.Add([]byte(`{"steps":[{"status":429,"retry_after":"1","delay":"1ms"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := fakeopenai.LoadTranscript(bytes.NewReader(b))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := tr.Save(&buf); err != nil {
			t.Fatalf("Save of a loaded transcript: %v", err)
		}
		saved := buf.String()
		back, err := fakeopenai.LoadTranscript(&buf)
		if err != nil {
			t.Fatalf("reload: %v\n%s", err, saved)
		}
		// Empty and absent lists load differently but save the same.
		var again bytes.Buffer
		if err := back.Save(&again); err != nil {
			t.Fatal(err)
		}
		if again.String() != saved {
			t.Fatalf("round trip changed the transcript:\n got %s\nwant %s", again.String(), saved)
		}
	})
}

// TestRecordAndReplayThroughLLM records a run through the real client,
// saves and reloads the transcript, replays it on a second fake with other
// model names, and expects the same replies.
func TestRecordAndReplayThroughLLM(t *testing.T) {
	original := loadTestTranscript(t)
	models := map[chat.Role]string{
		chat.RolePlanner: "rec-planner", chat.RoleEditor: "rec-editor", chat.RoleReporter: "rec-reporter",
	}
	roles := map[string]string{"rec-planner": "planner", "rec-editor": "editor", "rec-reporter": "reporter"}
	live := start(t, fakeopenai.Options{Script: original.Steps, Roles: roles})
	client, err := llm.New(llm.Options{BaseURL: live.URL(), APIKey: "sk-live", Models: models})
	if err != nil {
		t.Fatal(err)
	}
	rec := fakeopenai.NewRecorder(client)

	calls := []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleEditor, chat.RoleEditor, chat.RoleReporter}
	run := func(m chat.Model) []chat.Response {
		t.Helper()
		var out []chat.Response
		for i, role := range calls {
			resp, err := m.Chat(context.Background(), chat.Request{Role: role, Messages: []chat.Message{{Role: chat.User, Content: "step"}}})
			if err != nil {
				t.Fatalf("call %d (%s): %v", i, role, err)
			}
			resp.Model, resp.Requested = "", "" // differ between the runs by design
			out = append(out, resp)
		}
		return out
	}
	first := run(rec)
	if live.Remaining() != 0 {
		t.Fatalf("live script has %d steps left", live.Remaining())
	}

	var buf bytes.Buffer
	if err := rec.Transcript().Save(&buf); err != nil {
		t.Fatal(err)
	}
	saved, err := fakeopenai.LoadTranscript(&buf)
	if err != nil {
		t.Fatal(err)
	}
	replay := start(t, fakeopenai.Options{
		Script: saved.Steps,
		Roles:  map[string]string{"demo-planner": "planner", "demo-editor": "editor", "demo-reporter": "reporter"},
	})
	client2, err := llm.New(llm.Options{BaseURL: replay.URL(), Models: map[chat.Role]string{
		chat.RolePlanner: "demo-planner", chat.RoleEditor: "demo-editor", chat.RoleReporter: "demo-reporter",
	}})
	if err != nil {
		t.Fatal(err)
	}
	second := run(client2)
	if !reflect.DeepEqual(first, second) {
		t.Errorf("replay differs:\nrecorded %+v\nreplayed %+v", first, second)
	}
	if first[0].Usage != (chat.Usage{Prompt: 812, Completion: 96, Total: 908}) {
		t.Errorf("planner usage = %+v", first[0].Usage)
	}
	if tc := first[3].Message.ToolCalls; len(tc) != 1 || tc[0].Name != "finish" {
		t.Errorf("last editor reply = %+v", first[3].Message)
	}
}

func TestRecorderPassesErrorsThrough(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{Status: 400, Message: "nope"}}})
	client, err := llm.New(llm.Options{BaseURL: srv.URL(), Models: map[chat.Role]string{chat.RoleEditor: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := fakeopenai.NewRecorder(client)
	if _, err := rec.Chat(context.Background(), chat.Request{Role: chat.RoleEditor, Messages: []chat.Message{{Role: chat.User, Content: "x"}}}); err == nil {
		t.Fatal("Chat succeeded against a 400")
	}
	if n := len(rec.Transcript().Steps); n != 0 {
		t.Errorf("recorded %d steps from a failed call", n)
	}
}
