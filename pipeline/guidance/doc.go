// Package guidance finds a repository's own instructions for coding agents
// in a checkout — AGENTS.md files (the nearest to the files a change
// touches, like the convention's nesting) and .github/copilot-instructions.md
// — and reads them size-capped, as untrusted text for the prompts.
package guidance
