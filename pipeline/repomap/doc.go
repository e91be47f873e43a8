// Package repomap builds a compact, budgeted map of a repository for the
// model's prompt: outlines of the most relevant Go files, the rest by path.
package repomap
