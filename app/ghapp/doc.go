// Package ghapp is selfcode's side of a GitHub conversation outside a job's
// work: who may trigger it (permission checks), the replies it owes
// (status, help, denied), the comments and label swaps that report on an
// issue, and how a GitHub error becomes a job outcome (MapError).
package ghapp
