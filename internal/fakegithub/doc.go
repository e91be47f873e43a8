// Package fakegithub is an in-process simulated GitHub (REST API subset, App JWT and
// installation-token auth, and git smart-HTTP over real bare repositories) for tests
// and for `selfcode demo`.
package fakegithub
