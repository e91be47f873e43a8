package fakeopenai

import (
	"context"
	"sync"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// Recorder is a chat.Model that passes calls to another model and keeps each
// reply as a transcript step tagged with the call's role, so a run against a
// real model can be saved and replayed later.
type Recorder struct {
	next chat.Model

	mu    sync.Mutex
	steps []Step
}

// NewRecorder records the replies of next.
func NewRecorder(next chat.Model) *Recorder {
	return &Recorder{next: next}
}

// Chat calls the wrapped model and records a successful reply; errors are
// returned as they are and not recorded.
func (r *Recorder) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	resp, err := r.next.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	step := Step{
		Role:             string(req.Role),
		Content:          resp.Message.Content,
		PromptTokens:     resp.Usage.Prompt,
		CompletionTokens: resp.Usage.Completion,
		CachedTokens:     resp.Usage.CachedPrompt,
		FinishReason:     resp.FinishReason,
	}
	for _, tc := range resp.Message.ToolCalls {
		step.ToolCalls = append(step.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	r.mu.Lock()
	r.steps = append(r.steps, step)
	r.mu.Unlock()
	return resp, nil
}

// Transcript returns the replies recorded so far.
func (r *Recorder) Transcript() *Transcript {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Transcript{Steps: append([]Step(nil), r.steps...)}
}
