package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline/chat"
)

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts llm.Options
		want string
	}{
		{"no base URL", llm.Options{Models: testModels}, "base URL"},
		{"relative base URL", llm.Options{BaseURL: "/v1", Models: testModels}, "absolute http(s) URL"},
		{"other scheme", llm.Options{BaseURL: "ftp://example.invalid/v1", Models: testModels}, "absolute http(s) URL"},
		{"no models", llm.Options{BaseURL: "http://127.0.0.1:1/v1"}, "no models"},
		{"empty model", llm.Options{BaseURL: "http://127.0.0.1:1/v1", Models: map[chat.Role]string{chat.RoleEditor: ""}}, `role "editor"`},
		{"negative timeout", llm.Options{BaseURL: "http://127.0.0.1:1/v1", Models: testModels, HTTPTimeout: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llm.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestEditorToolCallRoundTrip(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{
		Role: "editor",
		ToolCalls: []fakeopenai.ToolCall{
			{ID: "call_a", Name: "view", Arguments: `{"path":"main.go"}`},
			{Name: "search", Arguments: `{"pattern":"func Greet"}`},
		},
		PromptTokens:     120,
		CompletionTokens: 30,
	}}})
	c, _ := newClient(t, fake.URL(), nil)

	viewParams := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	req := chat.Request{
		Role: chat.RoleEditor,
		Messages: []chat.Message{
			{Role: chat.System, Content: "Edit the repository with the tools."},
			{Role: chat.User, Content: "Add a --version flag."},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_0", Name: "view", Arguments: `{"path":"go.mod"}`}}},
			{Role: chat.ToolRole, ToolCallID: "call_0", Name: "view", Content: "1: module example.com/x"},
			{Role: chat.ToolRole, ToolCallID: "call_1", Name: "view", Content: ""},
		},
		Tools: []chat.Tool{
			{Name: "view", Description: "Show a file.", Parameters: viewParams},
			{Name: "finish", Description: "Stop editing."},
		},
	}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}

	// The reply, mapped back.
	if resp.Message.Role != chat.Assistant || resp.Message.Content != "" {
		t.Errorf("message = %+v, want an assistant message without content", resp.Message)
	}
	if len(resp.Message.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v, want 2", resp.Message.ToolCalls)
	}
	if got := resp.Message.ToolCalls[0]; got != (chat.ToolCall{ID: "call_a", Name: "view", Arguments: `{"path":"main.go"}`}) {
		t.Errorf("tool call 0 = %+v", got)
	}
	if got := resp.Message.ToolCalls[1]; got.ID == "" || got.Name != "search" || got.Arguments != `{"pattern":"func Greet"}` {
		t.Errorf("tool call 1 = %+v, want search with a generated id", got)
	}
	if resp.FinishReason != "tool_calls" || resp.Model != "editor-model" {
		t.Errorf("finish reason %q, model %q", resp.FinishReason, resp.Model)
	}
	if resp.Usage != (chat.Usage{Prompt: 120, Completion: 30, Total: 150}) {
		t.Errorf("usage = %+v", resp.Usage)
	}

	// The request, as it went over the wire.
	reqs := fake.RequestsFor("editor-model")
	if len(reqs) != 1 {
		t.Fatalf("editor requests = %d, want 1", len(reqs))
	}
	r := reqs[0]
	if !r.HasAuth || r.Header.Get("Authorization") != "" {
		t.Errorf("HasAuth = %v, recorded Authorization = %q: want the header sent and its value not kept", r.HasAuth, r.Header.Get("Authorization"))
	}
	msgs := r.Body.Messages
	if len(msgs) != 5 {
		t.Fatalf("messages = %d, want 5", len(msgs))
	}
	tc := msgs[2].ToolCalls
	if msgs[2].Role != "assistant" || len(tc) != 1 || tc[0].ID != "call_0" || tc[0].Type != "function" ||
		tc[0].Function.Name != "view" || tc[0].Function.Arguments != `{"path":"go.mod"}` {
		t.Errorf("assistant message = %+v", msgs[2])
	}
	if msgs[3].Role != "tool" || msgs[3].ToolCallID != "call_0" || msgs[3].Content != "1: module example.com/x" {
		t.Errorf("tool message = %+v", msgs[3])
	}
	if msgs[4].Content == "" {
		t.Errorf("empty tool result sent without content: %+v", msgs[4])
	}
	raw := rawBody(t, r)
	rawMsgs := raw["messages"].([]any)
	if _, ok := rawMsgs[3].(map[string]any)["name"]; ok {
		t.Errorf("tool message carries name: %v", rawMsgs[3])
	}
	if _, ok := raw["response_format"]; ok {
		t.Errorf("editor request has response_format: %v", raw["response_format"])
	}
	if len(r.Body.Tools) != 2 {
		t.Fatalf("tools = %+v", r.Body.Tools)
	}
	for i, want := range []struct {
		name   string
		params string
	}{{"view", string(viewParams)}, {"finish", `{"type":"object","properties":{}}`}} {
		got := r.Body.Tools[i]
		if got.Type != "function" || got.Function.Name != want.name || !jsonEqual(t, got.Function.Parameters, []byte(want.params)) {
			t.Errorf("tool %d = %+v (params %s), want %s with %s", i, got, got.Function.Parameters, want.name, want.params)
		}
	}
}

func TestPlannerRequestAsksForJSONSchema(t *testing.T) {
	plan := readFile(t, "testdata/plan.json")
	schema := readFile(t, "testdata/plan.schema.json")
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{Role: "planner", Content: string(plan)}}})
	c, _ := newClient(t, fake.URL(), nil)

	req := userRequest(chat.RolePlanner, "Plan issue #12.")
	req.Schema = &chat.Schema{Name: "plan", Schema: schema, Strict: true}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Message.Content != string(plan) || resp.FinishReason != "stop" {
		t.Errorf("reply = %q (%s)", resp.Message.Content, resp.FinishReason)
	}

	reqs := fake.RequestsFor("planner-model")
	if len(reqs) != 1 {
		t.Fatalf("planner requests = %d, want 1", len(reqs))
	}
	raw := rawBody(t, reqs[0])
	rf, ok := raw["response_format"].(map[string]any)
	if !ok {
		t.Fatalf("no response_format in %s", reqs[0].Raw)
	}
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "plan" || js["strict"] != true {
		t.Errorf("response_format = %v, want type json_schema, name plan, strict", rf)
	}
	sent, _ := json.Marshal(js["schema"])
	if !jsonEqual(t, sent, schema) {
		t.Errorf("schema sent = %s", sent)
	}
	if _, ok := raw["tools"]; ok {
		t.Errorf("planner request offers tools")
	}
}

func TestReporterRequestHasNoToolsNorFormat(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{Role: "reporter", Content: "All went well."}}})
	c, _ := newClient(t, fake.URL(), nil)
	resp, err := c.Chat(context.Background(), userRequest(chat.RoleReporter, "Summarise the night."))
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Message.Content != "All went well." {
		t.Errorf("content = %q", resp.Message.Content)
	}
	raw := rawBody(t, fake.Requests()[0])
	for _, k := range []string{"tools", "response_format", "tool_choice"} {
		if _, ok := raw[k]; ok {
			t.Errorf("reporter request has %q: %s", k, fake.Requests()[0].Raw)
		}
	}
}

func TestMaxTokensField(t *testing.T) {
	tests := []struct {
		model, want, notWant string
	}{
		{"gpt-4.1", "max_tokens", "max_completion_tokens"},
		{"llama3.1:8b", "max_tokens", "max_completion_tokens"},
		{"o3-mini", "max_completion_tokens", "max_tokens"},
		{"gpt-5", "max_completion_tokens", "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{Content: "ok"}}})
			c, _ := newClient(t, fake.URL(), func(o *llm.Options) {
				o.Models = map[chat.Role]string{chat.RoleReporter: tt.model}
			})
			req := userRequest(chat.RoleReporter, "hi")
			req.MaxTokens = 500
			if _, err := c.Chat(context.Background(), req); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			raw := rawBody(t, fake.Requests()[0])
			if raw[tt.want] != float64(500) {
				t.Errorf("%s = %v, want 500 (body %s)", tt.want, raw[tt.want], fake.Requests()[0].Raw)
			}
			if _, ok := raw[tt.notWant]; ok {
				t.Errorf("%s sent too", tt.notWant)
			}
		})
	}
}

func TestRetriesThenSucceeds(t *testing.T) {
	base := 100 * time.Millisecond
	tests := []struct {
		name   string
		faults []fakeopenai.Step
		// waits holds the allowed [min, max] of each recorded wait.
		waits [][2]time.Duration
	}{
		{"429 with Retry-After", []fakeopenai.Step{{Status: 429, RetryAfter: "7"}},
			[][2]time.Duration{{7 * time.Second, 7 * time.Second}}},
		{"429 without Retry-After", []fakeopenai.Step{{Status: 429}},
			[][2]time.Duration{{base / 2, base}}},
		{"500 twice", []fakeopenai.Step{{Status: 500}, {Status: 502, Message: "bad gateway"}},
			[][2]time.Duration{{base / 2, base}, {base, 2 * base}}},
		{"503 with Retry-After", []fakeopenai.Step{{Status: 503, RetryAfter: "2"}},
			[][2]time.Duration{{2 * time.Second, 2 * time.Second}}},
		{"408", []fakeopenai.Step{{Status: 408}},
			[][2]time.Duration{{base / 2, base}}},
		{"timeout", []fakeopenai.Step{{Delay: fakeopenai.Duration(time.Hour)}},
			[][2]time.Duration{{base / 2, base}}},
		{"garbage body", []fakeopenai.Step{{RawBody: "this is not JSON"}},
			[][2]time.Duration{{base / 2, base}}},
		{"no choices", []fakeopenai.Step{{RawBody: `{"id":"x","object":"chat.completion","choices":[]}`}},
			[][2]time.Duration{{base / 2, base}}},
		{"mixed", []fakeopenai.Step{{Status: 500}, {Status: 429, RetryAfter: "1"}, {RawBody: "{"}},
			[][2]time.Duration{{base / 2, base}, {time.Second, time.Second}, {2 * base, 4 * base}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := append(append([]fakeopenai.Step(nil), tt.faults...), fakeopenai.Step{Content: "ok"})
			fake := newFake(t, fakeopenai.Options{Script: script})
			c, sl := newClient(t, fake.URL(), func(o *llm.Options) { o.HTTPTimeout = 300 * time.Millisecond })
			resp, err := c.Chat(context.Background(), userRequest(chat.RoleFixer, "fix it"))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Message.Content != "ok" {
				t.Errorf("content = %q", resp.Message.Content)
			}
			if n := len(fake.Requests()); n != len(tt.faults)+1 {
				t.Errorf("requests = %d, want %d", n, len(tt.faults)+1)
			}
			got := sl.got()
			if len(got) != len(tt.waits) {
				t.Fatalf("waits = %v, want %d", got, len(tt.waits))
			}
			for i, w := range tt.waits {
				if got[i] < w[0] || got[i] > w[1] {
					t.Errorf("wait %d = %v, want within [%v, %v]", i, got[i], w[0], w[1])
				}
			}
		})
	}
}

func TestGivesUpAfterMaxRetries(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{
		{Status: 500, Message: "boom 1"}, {Status: 500, Message: "boom 2"}, {Status: 500, Message: "boom 3"}, {Content: "too late"},
	}})
	c, sl := newClient(t, fake.URL(), func(o *llm.Options) { o.MaxRetries = 2 })
	_, err := c.Chat(context.Background(), userRequest(chat.RoleEditor, "edit"))
	if !errors.Is(err, llm.ErrServer) {
		t.Fatalf("err = %v, want ErrServer", err)
	}
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != 500 || se.Message != "boom 3" {
		t.Errorf("StatusError = %+v", se)
	}
	for _, want := range []string{"chat editor: ", "giving up after 3 attempts", "boom 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := len(fake.Requests()); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
	if n := len(sl.got()); n != 2 {
		t.Errorf("waits = %d, want 2", n)
	}
}

func TestNegativeMaxRetriesMeansNone(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{Status: 503}, {Content: "ok"}}})
	c, _ := newClient(t, fake.URL(), func(o *llm.Options) { o.MaxRetries = -1 })
	if _, err := c.Chat(context.Background(), userRequest(chat.RoleEditor, "edit")); !errors.Is(err, llm.ErrServer) {
		t.Fatalf("err = %v, want ErrServer", err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestNonRetryableErrors(t *testing.T) {
	tests := []struct {
		name    string
		step    fakeopenai.Step
		kind    error
		message string
	}{
		{"400", fakeopenai.Step{Status: 400, Message: "messages[1].content is required"}, llm.ErrBadRequest, "messages[1].content is required"},
		{"404 model", fakeopenai.Step{Status: 404, Message: "The model does not exist"}, llm.ErrBadRequest, "The model does not exist"},
		{"401", fakeopenai.Step{Status: 401, Message: "Incorrect API key provided"}, llm.ErrUnauthorized, "Incorrect API key"},
		{"403", fakeopenai.Step{Status: 403}, llm.ErrUnauthorized, "HTTP 403"},
		{"429 quota", fakeopenai.Step{Status: 429, RawBody: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`},
			llm.ErrRateLimited, "exceeded your current quota"},
		{"400 not JSON", fakeopenai.Step{Status: 400, RawBody: "<html>bad request</html>"}, llm.ErrBadRequest, "<html>bad request</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{tt.step, {Content: "never"}}})
			c, sl := newClient(t, fake.URL(), nil)
			_, err := c.Chat(context.Background(), userRequest(chat.RoleEditor, "edit"))
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
			if !strings.HasPrefix(err.Error(), "chat editor: ") || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q: want prefix %q and %q", err, "chat editor: ", tt.message)
			}
			if n := len(fake.Requests()); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
			if n := len(sl.got()); n != 0 {
				t.Errorf("waited %d times", n)
			}
		})
	}
}

func TestGarbageIsRetriedOnce(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{
		{RawBody: "garbage"}, {RawBody: `{"choices":[]}`}, {Content: "never reached"},
	}})
	c, _ := newClient(t, fake.URL(), nil)
	_, err := c.Chat(context.Background(), userRequest(chat.RoleEditor, "edit"))
	if !errors.Is(err, llm.ErrBadReply) || !strings.Contains(err.Error(), "no choices") {
		t.Fatalf("err = %v, want ErrBadReply about no choices", err)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	c, sl := newClient(t, url, func(o *llm.Options) { o.MaxRetries = 2 })
	_, err = c.Chat(context.Background(), userRequest(chat.RoleEditor, "edit"))
	if !errors.Is(err, llm.ErrConnection) {
		t.Fatalf("err = %v, want ErrConnection", err)
	}
	if n := len(sl.got()); n != 2 {
		t.Errorf("waits = %d, want 2", n)
	}
}

func TestJSONSchemaFallback(t *testing.T) {
	plan := string(readFile(t, "testdata/plan.json"))
	schema := readFile(t, "testdata/plan.schema.json")
	fake := newFake(t, fakeopenai.Options{
		RejectJSONSchema: true,
		Script:           []fakeopenai.Step{{Role: "planner", Content: plan}, {Role: "planner", Content: plan}},
	})
	c, sl := newClient(t, fake.URL(), nil)
	req := userRequest(chat.RolePlanner, "Plan issue #12.")
	req.Schema = &chat.Schema{Name: "plan", Schema: schema, Strict: true}

	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("first Chat: %v", err)
	}
	if resp.Message.Content != plan {
		t.Errorf("content = %q", resp.Message.Content)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want the rejected one and its retry", len(reqs))
	}
	if reqs[0].Body.ResponseFormat == nil || reqs[1].Body.ResponseFormat != nil {
		t.Fatalf("response_format: first %+v, retry %+v; want it sent then dropped", reqs[0].Body.ResponseFormat, reqs[1].Body.ResponseFormat)
	}
	msgs := reqs[1].Body.Messages
	if len(msgs) != 2 || msgs[0].Role != "system" {
		t.Fatalf("retry messages = %+v, want the system note folded into the system message", msgs)
	}
	sys := string(msgs[0].Content)
	for _, want := range []string{"You are a careful engineer.", "JSON only", `"plan"`, `"enum":["create","modify","delete"]`} {
		if !strings.Contains(sys, want) {
			t.Errorf("system message lacks %q:\n%s", want, sys)
		}
	}
	if n := len(sl.got()); n != 0 {
		t.Errorf("the fallback waited %d times", n)
	}

	// The client remembers: the next schema call goes straight to the fallback.
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatalf("second Chat: %v", err)
	}
	reqs = fake.Requests()
	if len(reqs) != 3 || reqs[2].Body.ResponseFormat != nil {
		t.Fatalf("requests = %d, last response_format %+v; want one more without it", len(reqs), reqs[len(reqs)-1].Body.ResponseFormat)
	}
}

func TestJSONSchemaFallbackWithoutSystemMessage(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{RejectJSONSchema: true, Script: []fakeopenai.Step{{Content: "{}"}}})
	c, _ := newClient(t, fake.URL(), nil)
	req := chat.Request{
		Role:     chat.RolePlanner,
		Messages: []chat.Message{{Role: chat.User, Content: "Plan."}},
		Schema:   &chat.Schema{Name: "plan", Schema: json.RawMessage(`{"type":"object"}`)},
	}
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	msgs := fake.Requests()[1].Body.Messages
	if len(msgs) != 2 || msgs[0].Role != "system" || !strings.Contains(string(msgs[0].Content), `{"type":"object"}`) || msgs[1].Role != "user" {
		t.Errorf("messages = %+v, want a system note then the user message", msgs)
	}
}

func TestOtherBadRequestDoesNotTriggerFallback(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{Status: 400, Message: "context length exceeded"}, {Content: "{}"}}})
	c, _ := newClient(t, fake.URL(), nil)
	req := userRequest(chat.RolePlanner, "Plan.")
	req.Schema = &chat.Schema{Name: "plan", Schema: json.RawMessage(`{"type":"object"}`)}
	if _, err := c.Chat(context.Background(), req); !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("err = %v, want ErrBadRequest", err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestBudgetSharedAcrossClients(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{
		{Role: "planner", Content: "{}", PromptTokens: 40, CompletionTokens: 30},
		{Role: "editor", Content: "done", PromptTokens: 20, CompletionTokens: 20},
		{Role: "editor", Content: "never served"},
	}})
	budget := llm.NewBudget(100)
	planner, _ := newClient(t, fake.URL(), func(o *llm.Options) { o.Budget = budget })
	editor, _ := newClient(t, fake.URL(), func(o *llm.Options) { o.Budget = budget })
	ctx := context.Background()

	if _, err := planner.Chat(ctx, userRequest(chat.RolePlanner, "plan")); err != nil {
		t.Fatalf("planner: %v", err)
	}
	if got := budget.Remaining(); got != 30 {
		t.Errorf("Remaining = %d, want 30", got)
	}
	if _, err := editor.Chat(ctx, userRequest(chat.RoleEditor, "edit")); err != nil {
		t.Fatalf("editor: %v", err)
	}
	_, err := editor.Chat(ctx, userRequest(chat.RoleEditor, "edit more"))
	if !errors.Is(err, chat.ErrBudgetExhausted) || !strings.HasPrefix(err.Error(), "chat editor: ") {
		t.Fatalf("err = %v, want chat editor: … ErrBudgetExhausted", err)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2 (no call once the budget is spent)", n)
	}
	if budget.Used() != 110 || budget.Remaining() != 0 {
		t.Errorf("Used %d, Remaining %d; want 110, 0", budget.Used(), budget.Remaining())
	}
	by := budget.ByRole()
	if len(by) != 2 || by[chat.RolePlanner] != 70 || by[chat.RoleEditor] != 40 {
		t.Errorf("ByRole = %v", by)
	}
}

func TestUsageWithoutTotal(t *testing.T) {
	body := `{"id":"c1","object":"chat.completion","model":"fixer-model","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{RawBody: body}}})
	budget := llm.NewBudget(0)
	var seen []chat.Usage
	c, _ := newClient(t, fake.URL(), func(o *llm.Options) {
		o.Budget = budget
		o.Observer = func(role chat.Role, u chat.Usage) {
			if role != chat.RoleFixer {
				t.Errorf("observer role = %q", role)
			}
			seen = append(seen, u)
		}
	})
	resp, err := c.Chat(context.Background(), userRequest(chat.RoleFixer, "fix"))
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := chat.Usage{Prompt: 5, Completion: 7, Total: 12}
	if resp.Usage != want || len(seen) != 1 || seen[0] != want {
		t.Errorf("usage %+v, observed %+v; want %+v", resp.Usage, seen, want)
	}
	if budget.Used() != 12 || budget.ByRole()[chat.RoleFixer] != 12 {
		t.Errorf("budget used %d, by role %v", budget.Used(), budget.ByRole())
	}
}

func TestUnknownRole(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{})
	c, _ := newClient(t, fake.URL(), func(o *llm.Options) { o.Models = map[chat.Role]string{chat.RoleEditor: "editor-model"} })
	_, err := c.Chat(context.Background(), userRequest(chat.RolePlanner, "plan"))
	if !errors.Is(err, llm.ErrUnknownRole) {
		t.Fatalf("err = %v, want ErrUnknownRole", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	hit := make(chan struct{}, 1)
	fake := newFake(t, fakeopenai.Options{Responder: func(fakeopenai.Request) fakeopenai.Step {
		select {
		case hit <- struct{}{}:
		default:
		}
		return fakeopenai.Step{Status: 500}
	}})
	// The real timer-based wait, with a backoff far longer than the test.
	c, err := llm.New(llm.Options{
		BaseURL: fake.URL(),
		Models:  testModels,
		Backoff: llm.Backoff{Base: time.Hour, Max: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A broken implementation fails on this deadline instead of hanging.
	ctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	go func() {
		<-hit
		cancel()
	}()
	_, err = c.Chat(ctx, userRequest(chat.RoleEditor, "edit"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestNoAPIKeySendsNoAuthorization(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{{Content: "ok"}}})
	c, _ := newClient(t, fake.URL(), func(o *llm.Options) { o.APIKey = "" })
	if _, err := c.Chat(context.Background(), userRequest(chat.RoleEditor, "hi")); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if fake.Requests()[0].HasAuth {
		t.Error("Authorization sent without an API key")
	}
}

func TestWrongAPIKeyIsUnauthorized(t *testing.T) {
	fake := newFake(t, fakeopenai.Options{APIKey: "sk-other", Script: []fakeopenai.Step{{Content: "ok"}}})
	c, _ := newClient(t, fake.URL(), nil)
	_, err := c.Chat(context.Background(), userRequest(chat.RoleEditor, "hi"))
	if !errors.Is(err, llm.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the key: %v", err)
	}
}

// TestUsageByKind: the prompt's cached part comes from go-openai's
// usage.prompt_tokens_details.cached_tokens, never more than the prompt;
// the reply names the model asked for and the one that answered.
func TestUsageByKind(t *testing.T) {
	reply := func(usage string) string {
		return `{"id":"c1","object":"chat.completion","model":"editor-model-2025-01-01","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":` + usage + `}`
	}
	tests := []struct {
		name string
		step fakeopenai.Step
		want chat.Usage
	}{
		{"cached part reported", fakeopenai.Step{RawBody: reply(`{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110,"prompt_tokens_details":{"cached_tokens":30}}`)},
			chat.Usage{Prompt: 100, CachedPrompt: 30, Completion: 10, Total: 110}},
		{"no details", fakeopenai.Step{RawBody: reply(`{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}`)},
			chat.Usage{Prompt: 100, Completion: 10, Total: 110}},
		{"details null", fakeopenai.Step{RawBody: reply(`{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110,"prompt_tokens_details":null}`)},
			chat.Usage{Prompt: 100, Completion: 10, Total: 110}},
		{"cached beyond the prompt is cut to it", fakeopenai.Step{RawBody: reply(`{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":50}}`)},
			chat.Usage{Prompt: 10, CachedPrompt: 10, Completion: 1, Total: 11}},
		{"scripted step", fakeopenai.Step{Content: "hi", PromptTokens: 200, CachedTokens: 150, CompletionTokens: 20},
			chat.Usage{Prompt: 200, CachedPrompt: 150, Completion: 20, Total: 220}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, fakeopenai.Options{Script: []fakeopenai.Step{tt.step}})
			c, _ := newClient(t, fake.URL(), nil)
			resp, err := c.Chat(context.Background(), userRequest(chat.RoleEditor, "edit"))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Usage != tt.want {
				t.Errorf("usage %+v, want %+v", resp.Usage, tt.want)
			}
			if resp.Requested != "editor-model" || resp.Model == "" {
				t.Errorf("requested %q, answered %q", resp.Requested, resp.Model)
			}
		})
	}
}
