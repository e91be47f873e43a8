package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Usage is the token count the API reported for one call, by kind.
type Usage struct {
	Prompt int `json:"prompt_tokens"`
	// CachedPrompt is the part of Prompt the API served from its prompt
	// cache (usage.prompt_tokens_details.cached_tokens), billed at the
	// cached-input price.
	CachedPrompt int `json:"cached_prompt_tokens,omitempty"`
	Completion   int `json:"completion_tokens"`
	Total        int `json:"total_tokens"`
}

// Add sums two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{Prompt: u.Prompt + v.Prompt, CachedPrompt: u.CachedPrompt + v.CachedPrompt,
		Completion: u.Completion + v.Completion, Total: u.Total + v.Total}
}

// Response is the model's reply.
type Response struct {
	Message      Message `json:"message"`
	Usage        Usage   `json:"usage"`
	FinishReason string  `json:"finish_reason,omitempty"`
	// Model is the model that answered, as the API names it (often a
	// dated snapshot such as gpt-4o-2024-08-06); Requested is the model
	// the call asked for, as configured.
	Model     string `json:"model,omitempty"`
	Requested string `json:"requested_model,omitempty"`
}

// Model is what the pipeline needs of a language model.
type Model interface {
	Chat(ctx context.Context, req Request) (Response, error)
}

// ErrBudgetExhausted is returned (wrapped) when a call would exceed a
// budget: the job's tokens, or its installation's tokens or dollars for the
// day; the pipeline stops cleanly with that reason. A *BudgetError says which.
var ErrBudgetExhausted = errors.New("token budget exhausted")

// Limit names a budget a model call can be refused for.
type Limit string

// Budgets.
const (
	// LimitJobTokens: the job's own tokens (.selfcode.yml limits.max_tokens).
	LimitJobTokens Limit = "max_tokens"
	// LimitDailyTokens: the installation's tokens today
	// (SELFCODE_DAILY_TOKEN_BUDGET).
	LimitDailyTokens Limit = "daily_tokens"
	// LimitDailyCost: the installation's dollars today
	// (SELFCODE_DAILY_COST_BUDGET).
	LimitDailyCost Limit = "daily_cost"
)

// BudgetError is a call refused because a budget is spent; it matches
// ErrBudgetExhausted with errors.Is.
type BudgetError struct {
	Limit  Limit
	Detail string // how much of it is used, e.g. "1000 of 1000 tokens today"
}

func (e *BudgetError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v (%s)", ErrBudgetExhausted, e.Limit)
	}
	return fmt.Sprintf("%v (%s): %s", ErrBudgetExhausted, e.Limit, e.Detail)
}

// Is makes errors.Is(err, ErrBudgetExhausted) hold.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }
