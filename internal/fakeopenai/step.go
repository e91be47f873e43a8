package fakeopenai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Step is one scripted reply: either an assistant message (Content and/or
// ToolCalls, with usage and finish reason) or a fault (Status, RawBody, or a
// Delay longer than the client will wait).
type Step struct {
	// Role, when set, makes the step answer only requests for that role (the
	// request's model mapped through Options.Roles). Empty: any request.
	Role string `json:"role,omitempty"`

	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// PromptTokens and CompletionTokens are reported in usage; zero means
	// "estimate from the request and reply lengths" (about 4 bytes a token).
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	// CachedTokens is the part of the prompt reported as served from the
	// prompt cache (usage.prompt_tokens_details.cached_tokens); at most
	// the prompt's tokens.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// FinishReason defaults to "tool_calls" when there are tool calls, else "stop".
	FinishReason string `json:"finish_reason,omitempty"`

	// Status, when not 0 or 200, answers with that HTTP status and an
	// OpenAI-style error body carrying Message.
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// RetryAfter is sent as the Retry-After header (seconds or an HTTP date).
	RetryAfter string `json:"retry_after,omitempty"`
	// Delay is waited before answering; the wait ends early when the client
	// gives up (request context) or the server closes.
	Delay Duration `json:"delay,omitempty"`
	// RawBody, when set, is sent verbatim instead of a generated body (status
	// Status, or 200): garbage, a reply without choices, odd usage fields.
	RawBody string `json:"raw_body,omitempty"`
}

// ToolCall is one tool call in a scripted reply.
type ToolCall struct {
	ID   string `json:"id,omitempty"` // generated when empty
	Name string `json:"name"`
	// Arguments is the arguments text exactly as the model sends it. In JSON
	// it may be written as an object (stored compactly) or as a string (which
	// may hold invalid JSON, to script a model that sends broken arguments).
	Arguments string `json:"-"`
}

type toolCallJSON struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MarshalJSON writes Arguments as an object when it is a compact JSON object
// (so reading it back gives the same text), else as a string.
func (t ToolCall) MarshalJSON() ([]byte, error) {
	out := toolCallJSON{ID: t.ID, Name: t.Name}
	switch {
	case t.Arguments == "":
	case isCompactJSONObject(t.Arguments):
		out.Arguments = json.RawMessage(t.Arguments)
	default:
		s, err := json.Marshal(t.Arguments)
		if err != nil {
			return nil, fmt.Errorf("encode tool arguments: %w", err)
		}
		out.Arguments = s
	}
	return json.Marshal(out)
}

// UnmarshalJSON accepts Arguments as a JSON object or a JSON string.
func (t *ToolCall) UnmarshalJSON(b []byte) error {
	var in toolCallJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*t = ToolCall{ID: in.ID, Name: in.Name}
	raw := bytes.TrimSpace(in.Arguments)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &t.Arguments); err != nil {
			return fmt.Errorf("tool call %q arguments: %w", in.Name, err)
		}
	case raw[0] == '{':
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return fmt.Errorf("tool call %q arguments: %w", in.Name, err)
		}
		t.Arguments = buf.String()
	default:
		return fmt.Errorf("tool call %q arguments: want an object or a string, got %.20s", in.Name, raw)
	}
	return nil
}

// isCompactJSONObject reports arguments that can be written as an object
// and read back as the same text (encoding/json would rewrite characters it
// HTML-escapes, so text holding them stays a string).
func isCompactJSONObject(s string) bool {
	if strings.ContainsAny(s, "<>&\u2028\u2029") {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &m) != nil || m == nil {
		return false
	}
	var buf bytes.Buffer
	return json.Compact(&buf, []byte(s)) == nil && buf.String() == s
}

// Duration is a time.Duration written in JSON as text ("1.5s").
type Duration time.Duration

// MarshalText writes the duration as Go duration text.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(time.Duration(d).String()), nil
}

// UnmarshalText reads Go duration text ("250ms", "2s").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	if v < 0 {
		return fmt.Errorf("duration %s is negative", v)
	}
	*d = Duration(v)
	return nil
}

// IsFault reports whether the step answers with something other than a
// well-formed reply.
func (s Step) IsFault() bool {
	return (s.Status != 0 && s.Status != http.StatusOK) || s.RawBody != ""
}

// Validate reports a step that cannot be served as written.
func (s Step) Validate() error {
	if s.Status != 0 && (s.Status < 100 || s.Status > 599) {
		return fmt.Errorf("status %d is not an HTTP status", s.Status)
	}
	if s.IsFault() && (s.Content != "" || len(s.ToolCalls) > 0) {
		return errors.New("a fault step (status or raw_body) cannot also carry content or tool calls")
	}
	if s.PromptTokens < 0 || s.CompletionTokens < 0 || s.CachedTokens < 0 {
		return errors.New("token counts cannot be negative")
	}
	if s.CachedTokens > 0 && s.CachedTokens > s.PromptTokens {
		return errors.New("cached_tokens needs prompt_tokens at least as large")
	}
	if s.Delay < 0 {
		return errors.New("delay cannot be negative")
	}
	for i, tc := range s.ToolCalls {
		if tc.Name == "" {
			return fmt.Errorf("tool call %d has no name", i)
		}
	}
	return nil
}

// Transcript is a replayable script: the replies a model gave, in order,
// each tagged with the pipeline role it answered.
type Transcript struct {
	Steps []Step `json:"steps"`
}

// LoadTranscript reads a transcript written by Save (unknown fields are an
// error, so a typo in a hand-edited file is caught) and validates its steps.
func LoadTranscript(r io.Reader) (*Transcript, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var t Transcript
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("decode transcript: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode transcript: trailing data after the transcript object")
	}
	for i, s := range t.Steps {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("transcript step %d: %w", i, err)
		}
	}
	return &t, nil
}

// Save writes the transcript as indented JSON.
func (t *Transcript) Save(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("encode transcript: %w", err)
	}
	return nil
}
