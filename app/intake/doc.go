// Package intake decides what a verified GitHub webhook delivery asks
// selfcode to do (contract sections 3 and 4): start, change or cancel a job,
// record an installation, or nothing, and why.
package intake
