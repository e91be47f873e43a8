// Package samplerepo holds the sample repositories the demo and the
// pipeline tests work on. Files is a small Go repository with a real bug and
// a failing test: Greet ends its greeting with "." while its doc comment and
// test say "!". ServiceFiles is itemsd, a small Go HTTP service shipped as a
// container image, whose smoke stage builds and probes it.
package samplerepo
