package gitops

import (
	"context"
	"fmt"
	"strings"
)

// Authors lists the author e-mail addresses of the commits reachable from
// head but not from base (git log base..head), newest first. Both are commit
// SHAs or refs known to the workspace's repository.
func (g *Git) Authors(ctx context.Context, ws *Workspace, base, head string) ([]string, error) {
	for _, r := range []string{base, head} {
		if err := validRev(r); err != nil {
			return nil, err
		}
	}
	res, err := g.wsRun(ctx, ws, call{args: []string{"log", "--format=%ae", base + ".." + head, "--"}})
	if err != nil {
		return nil, fmt.Errorf("list authors of %s..%s: %w", base, head, err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(res.stdout)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// Identity returns the identity commits are made with.
func (g *Git) Identity() Identity { return g.identity }
