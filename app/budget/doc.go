// Package budget enforces the daily model budgets of each GitHub App
// installation, in tokens (SELFCODE_DAILY_TOKEN_BUDGET) and dollars
// (SELFCODE_DAILY_COST_BUDGET): it counts every model call of every job as
// it happens, refuses a job's next call once its installation's budget for
// the day is used up, and keeps a job queued until the next day when it is
// used up before the job starts.
package budget
