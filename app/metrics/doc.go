// Package metrics defines selfcode's Prometheus metrics on a registry of its
// own: deliveries by event and result, jobs by state, queue depth and job
// durations.
package metrics
