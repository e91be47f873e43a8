package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Request is one recorded chat-completions request.
type Request struct {
	Seq  int    // 1-based arrival order
	Role string // the role the model name maps to (Options.Roles), or the model name
	// Body is the decoded request; Raw is the body exactly as sent, for
	// assertions on the wire shape.
	Body ChatRequest
	Raw  json.RawMessage
	// Header holds the request headers with the Authorization value removed;
	// HasAuth reports whether an Authorization header was present.
	Header  http.Header
	HasAuth bool
}

// ChatRequest is the part of a chat-completions request body the fake reads.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Tools               []Tool          `json:"tools,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
}

// Message is one request message.
type Message struct {
	Role       string         `json:"role"`
	Content    Content        `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// Content is message content: a string on the wire, or an array of parts
// whose text parts are joined.
type Content string

// UnmarshalJSON accepts a string, null, or an array of {"type","text"} parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return fmt.Errorf("content parts: %w", err)
		}
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		*c = Content(sb.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("content: %w", err)
	}
	*c = Content(s)
	return nil
}

// WireToolCall is a tool call as the chat-completions API writes it.
type WireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// WireFunction is the function part of a WireToolCall.
type WireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is an offered tool.
type Tool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is the function definition of a Tool.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// ResponseFormat is the requested reply format.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is the json_schema part of a ResponseFormat.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// completion is the reply body.
type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	Index        int          `json:"index"`
	Message      replyMessage `json:"message"`
	FinishReason string       `json:"finish_reason"`
}

type replyMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []WireToolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *promptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
