// Package llm implements the pipeline's chat.Model over any OpenAI-compatible
// chat-completions endpoint, with retries, a JSON-schema fallback and token budgets.
package llm
