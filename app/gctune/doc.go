// Package gctune sets the garbage collector for selfcode's workload: a small
// live heap (jobs live in bbolt, not in memory) and bursts of webhook
// deliveries whose JSON decoding allocates heavily. With Go's default target
// of 100 %, the collector runs after every few megabytes and takes a third
// of intake's CPU (docs/benchmarks.md); 400 % keeps the heap small in
// absolute terms and most of that CPU for work.
package gctune
