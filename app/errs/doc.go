// Package errs names the kinds of failure selfcode distinguishes and maps each
// kind, in one place, to an HTTP status and to a job outcome.
package errs
