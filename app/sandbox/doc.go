// Package sandbox runs a job's commands in a locked-down, short-lived Docker
// container: no network during verification, no capabilities, a read-only root,
// resource limits, layered timeouts, output caps, and reaping of leftovers.
package sandbox
