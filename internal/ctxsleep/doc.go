// Package ctxsleep waits for a duration unless a context ends first; the
// retry loops of the GitHub and model clients share it.
package ctxsleep
