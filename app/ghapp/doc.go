// Package ghapp is selfcode's side of a GitHub conversation: who may trigger
// it (permission checks), the replies it owes (status, help, denied), the
// idempotent publishing of a job's progress, check run and pull request, and
// the comments and label swaps that report on an issue.
package ghapp
