// Package pipeline turns an issue and a maintainer's instructions into a
// verified change, or an honest report of why not: plan (JSON schema), edit
// through safe tools, verify in the sandbox against a baseline of the base
// commit, and feed failures to a fixer until green or out of budget. It
// depends only on narrow interfaces: chat.Model, Sandbox and Progress.
package pipeline
