package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// emptyParameters is sent for a tool that declares no parameters schema.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// emptyToolResult stands in for an empty tool result: the API requires
// content on tool messages.
const emptyToolResult = "(no output)"

// toOpenAI maps a pipeline request to a go-openai request for model.
func toOpenAI(model string, req chat.Request) (openai.ChatCompletionRequest, error) {
	out := openai.ChatCompletionRequest{Model: model}
	if req.MaxTokens > 0 {
		if usesCompletionTokens(model) {
			out.MaxCompletionTokens = req.MaxTokens
		} else {
			// max_tokens is what most OpenAI-compatible servers (local
			// ones especially) understand; OpenAI still accepts it for
			// these models.
			//lint:ignore SA1019 deliberate, see above
			out.MaxTokens = req.MaxTokens
		}
	}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if m.Role == chat.ToolRole {
			// The tool is identified by tool_call_id; several servers
			// reject "name" on tool messages, so it is not sent.
			if om.Content == "" {
				om.Content = emptyToolResult
			}
		} else {
			om.Name = m.Name
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID:       tc.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: args},
			})
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = emptyParameters
		}
		out.Tools = append(out.Tools, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	if s := req.Schema; s != nil {
		if s.Name == "" || len(bytes.TrimSpace(s.Schema)) == 0 {
			return out, errors.New("response schema needs a name and a JSON Schema")
		}
		out.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:   s.Name,
				Schema: s.Schema,
				Strict: s.Strict,
			},
		}
	}
	return out, nil
}

// usesCompletionTokens reports a model family that refuses max_tokens and
// takes max_completion_tokens instead (go-openai enforces this locally).
func usesCompletionTokens(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// withoutSchema drops response_format and asks for schema-shaped JSON in a
// system note instead (the pipeline validates what comes back).
func withoutSchema(req openai.ChatCompletionRequest, s *chat.Schema) openai.ChatCompletionRequest {
	req.ResponseFormat = nil
	schema := []byte(s.Schema)
	var buf bytes.Buffer
	if json.Compact(&buf, schema) == nil {
		schema = buf.Bytes()
	}
	note := fmt.Sprintf("Reply with JSON only: a single JSON object that matches the JSON Schema %q below. "+
		"No prose before or after it, no Markdown code fences.\n\nSchema:\n%s", s.Name, schema)
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+1)
	if len(req.Messages) > 0 && req.Messages[0].Role == chat.System {
		// Many chat templates want a single leading system message.
		first := req.Messages[0]
		first.Content = strings.TrimRight(first.Content, "\n") + "\n\n" + note
		msgs = append(msgs, first)
		msgs = append(msgs, req.Messages[1:]...)
	} else {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: chat.System, Content: note})
		msgs = append(msgs, req.Messages...)
	}
	req.Messages = msgs
	return req
}

// fromOpenAI maps the first choice of a reply to a call for model; call
// numbers the call, for tool call ids the server left out.
func fromOpenAI(model string, resp openai.ChatCompletionResponse, call uint64) chat.Response {
	ch := resp.Choices[0]
	msg := chat.Message{Role: chat.Assistant, Content: ch.Message.Content}
	if msg.Content == "" {
		for _, p := range ch.Message.MultiContent {
			msg.Content += p.Text
		}
	}
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
	}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", call, i)
		}
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if fc := ch.Message.FunctionCall; fc != nil && len(msg.ToolCalls) == 0 {
		// Legacy function_call answers from older servers.
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: fmt.Sprintf("call_%d_0", call), Name: fc.Name, Arguments: fc.Arguments})
	}
	u := chat.Usage{
		Prompt:     resp.Usage.PromptTokens,
		Completion: resp.Usage.CompletionTokens,
		Total:      resp.Usage.TotalTokens,
	}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		u.CachedPrompt = min(max(d.CachedTokens, 0), u.Prompt)
	}
	if u.Total == 0 {
		u.Total = u.Prompt + u.Completion
	}
	return chat.Response{Message: msg, Usage: u, FinishReason: string(ch.FinishReason), Model: resp.Model, Requested: model}
}
