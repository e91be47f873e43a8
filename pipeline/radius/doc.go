// Package radius measures a change's blast radius — the units of a
// repository that import the ones it touches, directly or not — from the
// imports of its Go, Python and JavaScript/TypeScript code, read as text on
// the server: nothing of the repository is built, run or evaluated, and no
// toolchain it names is consulted.
package radius
