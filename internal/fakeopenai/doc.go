// Package fakeopenai is an in-process OpenAI-compatible chat-completions server that
// answers from a script of recorded replies and faults, for tests and for replaying a
// model transcript in `selfcode demo`.
package fakeopenai
