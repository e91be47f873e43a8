// Package samplerepo is the small Go repository with a real bug and a
// failing test that the demo publishes on its simulated GitHub and that the
// pipeline tests work on: Greet ends its greeting with "." while its doc
// comment and test say "!".
package samplerepo
