// Package worker runs stored jobs: a pool that leases jobs from the store,
// heartbeats their leases, checks the sender's permission first, runs them,
// recovers panics into failures, honours cancel and shuts down gracefully.
package worker
