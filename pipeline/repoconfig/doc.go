// Package repoconfig parses and validates a repository's .selfcode.yml
// (contract section 7), fills in defaults and infers verify commands when
// the file names none.
package repoconfig
