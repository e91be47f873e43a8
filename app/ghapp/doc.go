// Package ghapp is selfcode's side of a GitHub conversation: who may trigger
// it (permission checks), the replies it owes (status, help, denied), and the
// idempotent publishing of a job's progress, check run and pull request.
package ghapp
