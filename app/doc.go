// Package app holds the parts selfcode's handlers hand work to: the durable job
// store and queue, the worker pool, the GitHub side, the sandbox and configuration.
// Each lives in its own sub-package with one job.
package app
