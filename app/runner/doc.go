// Package runner is the job path for pipeline jobs, in named steps:
// checkout (the workspace the work starts from and the branch it goes to),
// execute (the pipeline, and the job's report filled once from its output)
// and publish (commit, push, pull request, check run) — each idempotent, so
// a job that runs again edits what it published instead of duplicating it.
package runner
