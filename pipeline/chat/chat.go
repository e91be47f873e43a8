package chat

import (
	"context"
	"encoding/json"
	"errors"
)

// Role is the pipeline role a call is made for; each may use its own model.
type Role string

// Pipeline roles (contract section 8).
const (
	RolePlanner  Role = "planner"
	RoleEditor   Role = "editor"
	RoleFixer    Role = "fixer"
	RoleReporter Role = "reporter"
)

// Message authors.
const (
	System    = "system"
	User      = "user"
	Assistant = "assistant"
	ToolRole  = "tool"
)

// Message is one chat message.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant messages
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool messages
	Name       string     `json:"name,omitempty"`         // tool messages: the tool's name
}

// ToolCall is the model asking to run a tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON object as text, as the model sent it
}

// Tool is a function the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// Schema asks for a reply that is JSON matching a schema
// (response_format json_schema).
type Schema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// Request is one chat completion call.
type Request struct {
	Role      Role      `json:"role"`
	Messages  []Message `json:"messages"`
	Tools     []Tool    `json:"tools,omitempty"`
	Schema    *Schema   `json:"schema,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"`
}

// Usage is the token count the API reported for one call.
type Usage struct {
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
	Total      int `json:"total_tokens"`
}

// Response is the model's reply.
type Response struct {
	Message      Message `json:"message"`
	Usage        Usage   `json:"usage"`
	FinishReason string  `json:"finish_reason,omitempty"`
	Model        string  `json:"model,omitempty"`
}

// Model is what the pipeline needs of a language model.
type Model interface {
	Chat(ctx context.Context, req Request) (Response, error)
}

// ErrBudgetExhausted is returned (wrapped) when a call would exceed the job's
// token budget; the pipeline stops cleanly with that reason.
var ErrBudgetExhausted = errors.New("token budget exhausted")
