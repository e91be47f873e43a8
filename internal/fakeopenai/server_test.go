package fakeopenai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/poll"
)

func start(t *testing.T, opts fakeopenai.Options) *fakeopenai.Server {
	t.Helper()
	srv, err := fakeopenai.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// post sends a chat-completions request for model.
func post(t *testing.T, ctx context.Context, srv *fakeopenai.Server, body string) (answer, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return answer{resp.StatusCode, resp.Header, b}, nil
}

func chatBody(model, text string) string {
	b, _ := json.Marshal(map[string]any{
		"model":    model,
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	return string(b)
}

type completion struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	} `json:"usage"`
}

type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// ask posts and decodes a successful completion.
func ask(t *testing.T, srv *fakeopenai.Server, model, text string) completion {
	t.Helper()
	a, err := post(t, context.Background(), srv, chatBody(model, text))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	var c completion
	if err := json.Unmarshal(a.body, &c); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
	if len(c.Choices) != 1 {
		t.Fatalf("choices = %d", len(c.Choices))
	}
	return c
}

func content(c completion) string {
	if p := c.Choices[0].Message.Content; p != nil {
		return *p
	}
	return "<null>"
}

// askError posts and decodes an error answer.
func askError(t *testing.T, srv *fakeopenai.Server, model string) (answer, apiError) {
	t.Helper()
	a, err := post(t, context.Background(), srv, chatBody(model, "hi"))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	var e apiError
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("decode error body %s: %v", a.body, err)
	}
	return a, e
}

func TestSequentialScriptThenExhausted(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{Content: "one"}, {Content: "two"}, {Content: "three"}}})
	for _, want := range []string{"one", "two", "three"} {
		if got := content(ask(t, srv, "any-model", "hi")); got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
	}
	if srv.Remaining() != 0 {
		t.Errorf("Remaining = %d", srv.Remaining())
	}
	a, e := askError(t, srv, "any-model")
	if a.status != http.StatusInternalServerError || !strings.Contains(e.Error.Message, "fake: script exhausted") {
		t.Errorf("after the script: %d %q", a.status, e.Error.Message)
	}
}

func TestStepsMatchedByRole(t *testing.T) {
	srv := start(t, fakeopenai.Options{
		Roles: map[string]string{"planner-model": "planner", "editor-model": "editor"},
		Script: []fakeopenai.Step{
			{Role: "planner", Content: "plan A"},
			{Role: "editor", Content: "edit B"},
			{Content: "any C"},
			{Role: "planner", Content: "plan D"},
		},
	})
	tests := []struct{ model, want string }{
		{"editor-model", "edit B"},
		{"editor-model", "any C"}, // an untagged step answers any role
		{"planner-model", "plan A"},
		{"planner-model", "plan D"},
	}
	for i, tt := range tests {
		if got := content(ask(t, srv, tt.model, "hi")); got != tt.want {
			t.Errorf("call %d (%s) = %q, want %q", i, tt.model, got, tt.want)
		}
	}
	if a, _ := askError(t, srv, "editor-model"); a.status != http.StatusInternalServerError {
		t.Errorf("editor after the script: status %d", a.status)
	}
	reqs := srv.RequestsFor("planner-model")
	if len(reqs) != 2 || reqs[0].Role != "planner" || reqs[0].Seq != 3 {
		t.Errorf("planner requests = %+v", reqs)
	}
}

func TestUnmappedModelIsItsOwnRole(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{Role: "fixer", Content: "fixed"}}})
	if a, _ := askError(t, srv, "editor"); a.status != http.StatusInternalServerError {
		t.Errorf("editor took the fixer step: %d", a.status)
	}
	if got := content(ask(t, srv, "fixer", "hi")); got != "fixed" {
		t.Errorf("fixer reply = %q", got)
	}
}

func TestResponderAnswersWhenScriptHasNoStep(t *testing.T) {
	srv := start(t, fakeopenai.Options{
		Script: []fakeopenai.Step{{Content: "scripted"}},
		Responder: func(r fakeopenai.Request) fakeopenai.Step {
			return fakeopenai.Step{ToolCalls: []fakeopenai.ToolCall{{Name: "view", Arguments: `{"path":"` + string(r.Body.Messages[0].Content) + `"}`}}}
		},
	})
	if got := content(ask(t, srv, "m", "first")); got != "scripted" {
		t.Errorf("first reply = %q", got)
	}
	for _, p := range []string{"a.go", "b.go"} {
		c := ask(t, srv, "m", p)
		tc := c.Choices[0].Message.ToolCalls
		if len(tc) != 1 || tc[0].Function.Arguments != `{"path":"`+p+`"}` {
			t.Errorf("responder reply = %+v", c.Choices[0].Message)
		}
	}
}

func TestToolCallReply(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{
		ToolCalls: []fakeopenai.ToolCall{{ID: "call_x", Name: "view", Arguments: `{"path":"a"}`}, {Name: "finish"}},
	}}})
	c := ask(t, srv, "m", "go")
	msg := c.Choices[0].Message
	if msg.Role != "assistant" || msg.Content != nil {
		t.Errorf("message role %q content %v, want assistant with null content", msg.Role, msg.Content)
	}
	if len(msg.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", msg.ToolCalls)
	}
	if tc := msg.ToolCalls[0]; tc.ID != "call_x" || tc.Type != "function" || tc.Function.Name != "view" || tc.Function.Arguments != `{"path":"a"}` {
		t.Errorf("tool call 0 = %+v", tc)
	}
	if tc := msg.ToolCalls[1]; tc.ID == "" || tc.ID == "call_x" || tc.Function.Arguments != "{}" {
		t.Errorf("tool call 1 = %+v, want a fresh id and {} arguments", tc)
	}
	if c.Choices[0].FinishReason != "tool_calls" || c.Model != "m" {
		t.Errorf("finish %q model %q", c.Choices[0].FinishReason, c.Model)
	}
	if c.Usage.Prompt < 1 || c.Usage.Completion < 1 || c.Usage.Total != c.Usage.Prompt+c.Usage.Completion {
		t.Errorf("estimated usage = %+v", c.Usage)
	}
}

func TestScriptedUsageAndFinishReason(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{Content: "cut", PromptTokens: 10, CompletionTokens: 4, FinishReason: "length"}}})
	c := ask(t, srv, "m", "go")
	if c.Usage.Prompt != 10 || c.Usage.Completion != 4 || c.Usage.Total != 14 || c.Choices[0].FinishReason != "length" {
		t.Errorf("usage %+v finish %q", c.Usage, c.Choices[0].FinishReason)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name       string
		step       fakeopenai.Step
		status     int
		retryAfter string
		message    string
		errType    string
	}{
		{"429", fakeopenai.Step{Status: 429, RetryAfter: "3"}, 429, "3", "fake: Too Many Requests", "requests"},
		{"500", fakeopenai.Step{Status: 500, Message: "overloaded"}, 500, "", "overloaded", "server_error"},
		{"400", fakeopenai.Step{Status: 400, Message: "messages is required"}, 400, "", "messages is required", "invalid_request_error"},
		{"401", fakeopenai.Step{Status: 401}, 401, "", "fake: Unauthorized", "authentication_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{tt.step}})
			a, e := askError(t, srv, "m")
			if a.status != tt.status || a.header.Get("Retry-After") != tt.retryAfter {
				t.Errorf("status %d Retry-After %q, want %d %q", a.status, a.header.Get("Retry-After"), tt.status, tt.retryAfter)
			}
			if e.Error.Message != tt.message || e.Error.Type != tt.errType {
				t.Errorf("error = %+v, want %q (%s)", e.Error, tt.message, tt.errType)
			}
		})
	}
}

func TestRawBody(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{
		{RawBody: "not json {"},
		{Status: 502, RawBody: "<html>bad gateway</html>"},
	}})
	for _, want := range []answer{{status: 200, body: []byte("not json {")}, {status: 502, body: []byte("<html>bad gateway</html>")}} {
		a, err := post(t, context.Background(), srv, chatBody("m", "hi"))
		if err != nil {
			t.Fatal(err)
		}
		if a.status != want.status || !bytes.Equal(a.body, want.body) {
			t.Errorf("answer %d %q, want %d %q", a.status, a.body, want.status, want.body)
		}
	}
}

func TestDelayEndsWhenClientGivesUp(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{Delay: fakeopenai.Duration(time.Hour), Content: "late"}, {Content: "next"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := post(t, ctx, srv, chatBody("m", "hi")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("post = %v, want the client's deadline", err)
	}
	if got := content(ask(t, srv, "m", "again")); got != "next" {
		t.Errorf("after the delayed step: %q", got)
	}
}

func TestCloseEndsDelays(t *testing.T) {
	srv, err := fakeopenai.New(fakeopenai.Options{Script: []fakeopenai.Step{{Delay: fakeopenai.Duration(time.Hour), Content: "late"}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(chatBody("m", "hi")))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	poll.Until(t, "the request to arrive", 10*time.Second, func() bool { return len(srv.Requests()) > 0 })
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("delayed request still open after Close")
	}
}

func TestRecordsRequests(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{Content: "ok"}}})
	body := `{"model":"editor-model","messages":[{"role":"system","content":"sys"},` +
		`{"role":"user","content":[{"type":"text","text":"part 1, "},{"type":"text","text":"part 2"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"view","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"file"}],` +
		`"tools":[{"type":"function","function":{"name":"view","parameters":{"type":"object"}}}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"plan","schema":{"type":"object"},"strict":true}},"max_tokens":9}`
	if _, err := post(t, context.Background(), srv, body); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d", len(reqs))
	}
	r := reqs[0]
	if !r.HasAuth || r.Header.Get("Authorization") != "" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("HasAuth %v, headers %v", r.HasAuth, r.Header)
	}
	if string(r.Raw) != body {
		t.Errorf("Raw = %s", r.Raw)
	}
	b := r.Body
	if b.Model != "editor-model" || len(b.Messages) != 4 || b.Messages[1].Content != "part 1, part 2" ||
		b.Messages[2].ToolCalls[0].Function.Name != "view" || b.Messages[3].ToolCallID != "c1" || b.MaxTokens != 9 {
		t.Errorf("decoded body = %+v", b)
	}
	if len(b.Tools) != 1 || b.Tools[0].Function.Name != "view" || string(b.Tools[0].Function.Parameters) != `{"type":"object"}` {
		t.Errorf("tools = %+v", b.Tools)
	}
	if rf := b.ResponseFormat; rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "plan" || !rf.JSONSchema.Strict {
		t.Errorf("response_format = %+v", rf)
	}
	if got := srv.RequestsFor("other"); len(got) != 0 {
		t.Errorf("RequestsFor(other) = %d", len(got))
	}
}

func TestBadRequestBody(t *testing.T) {
	srv := start(t, fakeopenai.Options{Script: []fakeopenai.Step{{Content: "kept"}}})
	a, err := post(t, context.Background(), srv, `{"model": 5}`)
	if err != nil {
		t.Fatal(err)
	}
	if a.status != http.StatusBadRequest || srv.Remaining() != 1 {
		t.Errorf("status %d, remaining %d; want 400 and the step kept", a.status, srv.Remaining())
	}
}

func TestAPIKeyChecked(t *testing.T) {
	srv := start(t, fakeopenai.Options{APIKey: "sk-other", Script: []fakeopenai.Step{{Content: "ok"}}})
	a, e := askError(t, srv, "m")
	if a.status != http.StatusUnauthorized || e.Error.Type != "authentication_error" {
		t.Errorf("status %d error %+v", a.status, e.Error)
	}
	if srv.Remaining() != 1 {
		t.Error("an unauthorised request consumed a step")
	}
}

func TestRejectJSONSchema(t *testing.T) {
	srv := start(t, fakeopenai.Options{RejectJSONSchema: true, Script: []fakeopenai.Step{{Content: "{}"}}})
	body := `{"model":"m","messages":[{"role":"user","content":"plan"}],"response_format":{"type":"json_schema","json_schema":{"name":"plan","schema":{}}}}`
	a, err := post(t, context.Background(), srv, body)
	if err != nil {
		t.Fatal(err)
	}
	var e apiError
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatal(err)
	}
	if a.status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != "response_format" {
		t.Errorf("status %d error %+v", a.status, e.Error)
	}
	if srv.Remaining() != 1 {
		t.Error("the rejected request consumed a step")
	}
	if got := content(ask(t, srv, "m", "plan, as plain JSON")); got != "{}" {
		t.Errorf("plain request = %q", got)
	}
}

func TestEnqueue(t *testing.T) {
	srv := start(t, fakeopenai.Options{})
	if err := srv.Enqueue(fakeopenai.Step{Content: "late addition"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Enqueue(fakeopenai.Step{Status: 500, Content: "both"}); err == nil {
		t.Error("Enqueue accepted an invalid step")
	}
	if got := content(ask(t, srv, "m", "hi")); got != "late addition" {
		t.Errorf("reply = %q", got)
	}
}

func TestModelsAndUnknownRoutes(t *testing.T) {
	srv := start(t, fakeopenai.Options{Roles: map[string]string{"b-model": "editor", "a-model": "planner"}})
	resp, err := http.Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 2 || list.Data[0].ID != "a-model" || list.Data[1].ID != "b-model" {
		t.Errorf("models = %+v", list.Data)
	}
	r2, err := http.Get(srv.URL() + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusNotFound && r2.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET chat/completions = %d", r2.StatusCode)
	}
}

func TestNewRejectsInvalidScript(t *testing.T) {
	tests := []struct {
		name string
		step fakeopenai.Step
	}{
		{"fault with content", fakeopenai.Step{Status: 429, Content: "x"}},
		{"raw body with tool calls", fakeopenai.Step{RawBody: "x", ToolCalls: []fakeopenai.ToolCall{{Name: "view"}}}},
		{"bad status", fakeopenai.Step{Status: 42}},
		{"nameless tool", fakeopenai.Step{ToolCalls: []fakeopenai.ToolCall{{Arguments: "{}"}}}},
		{"negative tokens", fakeopenai.Step{Content: "x", PromptTokens: -1}},
		{"cached beyond the prompt", fakeopenai.Step{Content: "x", PromptTokens: 5, CachedTokens: 6}},
		{"cached without a prompt count", fakeopenai.Step{Content: "x", CachedTokens: 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if srv, err := fakeopenai.New(fakeopenai.Options{Script: []fakeopenai.Step{{Content: "fine"}, tt.step}}); err == nil {
				srv.Close()
				t.Fatal("New accepted the script")
			} else if !strings.Contains(err.Error(), "step 1") {
				t.Errorf("error %q does not name the step", err)
			}
		})
	}
}
