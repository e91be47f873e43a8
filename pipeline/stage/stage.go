// Package stage names the steps of a job and their statuses: one
// vocabulary for the pipeline that reports them, the runner and store that
// record them, and the reports and dashboard that show them.
package stage

import "time"

// Name is a step of a job.
type Name string

// The steps, in the order a job takes them.
const (
	Checkout Name = "checkout"
	Plan     Name = "plan"
	Edit     Name = "edit"
	Verify   Name = "verify"
	Fix      Name = "fix"
	Publish  Name = "publish"
)

// Status is where a step is.
type Status string

// Statuses.
const (
	Pending Status = "pending" // not reached yet (reports only)
	Running Status = "running"
	Pass    Status = "pass"
	Fail    Status = "fail"
	Skipped Status = "skipped"
)

// Done reports whether a step in status s has ended.
func (s Status) Done() bool { return s != Running && s != Pending && s != "" }

// Part is a share of a job's time, finer than its stages: where the time
// went. Parts may overlap (the baseline runs while the model works).
type Part string

// Parts of a job's time. Checkout, verify, fix and publish are the stages
// of the same names; the others are inside them.
const (
	PartQueue        Part = "queue"         // due → a worker starts it
	PartCheckout     Part = "checkout"      // the checkout stage
	PartSandboxStart Part = "sandbox_start" // containers started and the checkout copied in
	PartSetup        Part = "setup"         // setup steps (dependency installs)
	PartBaseline     Part = "baseline"      // verification of the base commit
	PartModel        Part = "model"         // waiting on the model
	PartVerify       Part = "verify"        // the verify stage
	PartFix          Part = "fix"           // the fix stage
	PartPublish      Part = "publish"       // the publish stage
)

// PartOrder lists the parts in the order reports show them.
func PartOrder() []Part {
	return []Part{PartQueue, PartCheckout, PartSandboxStart, PartSetup, PartBaseline, PartModel, PartVerify, PartFix, PartPublish}
}

// Span is the time a job spent in one part, as job records and reports
// carry it.
type Span struct {
	Part    Part    `json:"part"`
	Seconds float64 `json:"seconds"`
}

// Spans orders the measured parts of took as PartOrder does, leaving out
// the parts never measured.
func Spans(took map[Part]time.Duration) []Span {
	var out []Span
	for _, p := range PartOrder() {
		if d, ok := took[p]; ok {
			out = append(out, Span{Part: p, Seconds: d.Seconds()})
		}
	}
	return out
}
