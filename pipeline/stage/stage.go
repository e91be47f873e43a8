// Package stage names the steps of a job and their statuses: one
// vocabulary for the pipeline that reports them, the runner and store that
// record them, and the reports and dashboard that show them.
package stage

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
