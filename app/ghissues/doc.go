// Package ghissues comments on issues and swaps their labels through the
// GitHub App's installation clients, for the parts of selfcode that report
// on a job after it ends (overnight outcomes, budget notices).
package ghissues
