// Package chat defines the pipeline's own vocabulary for talking to a
// language model: messages, tool calls, tool definitions, requests with an
// optional JSON schema, responses with token usage. It has no I/O; app/llm
// implements it over an OpenAI-compatible API.
package chat
