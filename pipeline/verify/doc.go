// Package verify runs a repository's own verification commands through a
// sandbox Runner, reads their test results (pipeline/testreport, from the
// printed output and report files), and holds the one truth rule: Compare
// judges a change's run against the base commit's run test by test and
// gives the verdict — verified, failed or unverified — with its reasons. It
// also reruns newly failing tests to tell flaky ones, caches base runs, and
// condenses failures into a summary for the fixer model.
package verify
