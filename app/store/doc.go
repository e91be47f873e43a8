// Package store keeps selfcode's jobs durably in one bbolt file: the jobs
// themselves, the runnable FIFO, leases, scheduled jobs, delivery ids for
// deduplication and the single-flight index per (repository, issue).
package store
