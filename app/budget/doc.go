// Package budget enforces the daily model budgets of each GitHub App
// installation, in tokens (SELFCODE_DAILY_TOKEN_BUDGET) and dollars
// (SELFCODE_DAILY_COST_BUDGET): it counts every model call of every job as
// it happens, refuses a job's next call once its installation's budget for
// the day is used up, and keeps a job queued until the next day when it is
// used up before the job starts. The server's own calls (the morning
// report's narrative) are held to the same limits on an account of their
// own (Budget.Server).
package budget
