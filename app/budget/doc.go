// Package budget enforces the daily model-token budget of each GitHub App
// installation (SELFCODE_DAILY_TOKEN_BUDGET): it counts the tokens jobs use
// per installation and day, and keeps a job queued until the next day when
// its installation's budget for today is used up.
package budget
