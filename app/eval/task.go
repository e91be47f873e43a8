package eval

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/selfcode/selfcode/internal/utf8cut"
)

// Issue is an issue a commit message links to.
type Issue struct {
	Number        int
	Title         string
	Body          string
	IsPullRequest bool
}

// IssueSource reads the issues of the repository being evaluated.
type IssueSource interface {
	Issue(ctx context.Context, number int) (Issue, error)
}

// LinkedIssue records what a task's linked issue gave the model.
type LinkedIssue struct {
	Number   int    `json:"number"`
	Included bool   `json:"included"`
	Why      string `json:"why,omitempty"` // why it was not included
}

// fixesRE finds GitHub's closing keywords naming an issue of the same
// repository ("Fixes #12", "closes: #3").
var fixesRE = regexp.MustCompile(`(?i)\b(?:fix|fixes|fixed|close|closes|closed|resolve|resolves|resolved):?\s+#([0-9]{1,9})\b`)

// maxLinkedIssues bounds the issues read per commit; maxIssueBody bounds
// each body given to the model.
const (
	maxLinkedIssues = 3
	maxIssueBody    = 8 << 10
)

// linkedIssues are the issue numbers msg says it fixes, in order, once.
func linkedIssues(msg string) []int {
	var out []int
	for _, m := range fixesRE.FindAllStringSubmatch(msg, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n <= 0 {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o == n
		}
		if !dup && len(out) < maxLinkedIssues {
			out = append(out, n)
		}
	}
	return out
}

// describe is the task the model gets for a commit: its message, then the
// title and body of each issue it says it fixes when they can be read.
// Pull requests are left out: their description tells the fix.
func describe(ctx context.Context, msg string, issues IssueSource, unreachable string) (string, []LinkedIssue) {
	task := msg
	var linked []LinkedIssue
	for _, n := range linkedIssues(msg) {
		li := LinkedIssue{Number: n}
		switch {
		case issues == nil:
			li.Why = unreachable
		default:
			is, err := issues.Issue(ctx, n)
			switch {
			case err != nil:
				li.Why = fmt.Sprintf("not readable: %v", err)
			case is.IsPullRequest:
				li.Why = "a pull request, not an issue: its description would tell the fix"
			default:
				li.Included = true
				task += fmt.Sprintf("\n\nLinked issue #%d: %s\n\n%s", n, strings.TrimSpace(is.Title),
					strings.TrimSpace(utf8cut.Cut(is.Body, maxIssueBody)))
			}
		}
		linked = append(linked, li)
	}
	return task, linked
}
