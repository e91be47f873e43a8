// Package docscheck holds tests that keep the operator documentation in
// docs/ true to the code: every metric and setting is named there and every
// repository file it links to exists.
package docscheck
