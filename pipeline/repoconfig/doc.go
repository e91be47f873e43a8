// Package repoconfig parses and validates a repository's .selfcode.yml
// (contract section 7), fills in defaults, and infers setup steps and verify
// commands for Go, Node.js/TypeScript and Python repositories (and a
// Makefile's test target) when the file names none, without running
// anything from the tree.
package repoconfig
