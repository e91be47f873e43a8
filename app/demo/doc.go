// Package demo runs the whole selfcode loop on one machine with nothing
// configured: a simulated GitHub (internal/fakegithub) holding a small Go
// repository with a real bug and a failing test, a signed /selfcode comment
// delivered through the real server path, the real queue, sandbox and
// publishing, and a recorded model transcript replayed through the real
// OpenAI client unless a model is configured.
package demo
