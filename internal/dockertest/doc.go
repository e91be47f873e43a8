// Package dockertest gives tests outside app/sandbox a real sandbox manager:
// it skips the test when no Docker engine (or image) is there, except under
// SELFCODE_REQUIRE_DOCKER=1 (CI), where that is a failure.
package dockertest
