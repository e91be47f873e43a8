// Package dockerfile reads which images a Dockerfile builds from, with
// BuildKit's own parser and shell lexer: what the sandbox image build needs
// pulled, and what a repository's smoke build needs already on the engine.
package dockerfile
