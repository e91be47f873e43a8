// Package testreport reads what test runners report — go test (JSON and
// plain text), pytest, unittest, jest, vitest, mocha, node:test and other TAP
// producers, and JUnit XML files — into one test-by-test Report that
// verification compares between the base commit and a change.
package testreport
