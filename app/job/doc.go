// Package job defines a selfcode job: what triggered it, its state machine,
// outcomes, stages and sortable identifiers. It has no I/O.
package job
