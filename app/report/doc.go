// Package report turns what the pipeline produced into the one report of a
// job, which the templates render as the progress comment, the pull request
// body, the check run and the failure comment.
package report
