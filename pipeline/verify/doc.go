// Package verify runs a repository's own verification commands through a
// sandbox Runner, parses `go test -json` output, compares a change's run
// against the base commit's run to tell regressions from pre-existing
// failures, caches base runs, and condenses failures into a summary for the
// fixer model.
package verify
