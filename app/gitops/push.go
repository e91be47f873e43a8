package gitops

import (
	"context"
	"fmt"
	"strings"
)

// PushSelfcodeBranch pushes the workspace's HEAD to the remote branch, which
// must start with "selfcode/". The push is forced only under a lease: it
// succeeds only if the remote branch is at expectedRemoteSHA, or does not
// exist when expectedRemoteSHA is "". Otherwise it returns ErrLeaseRejected.
// Pushing a commit the branch already points at succeeds as a no-op, so a
// retried job may repeat its push. Like every push, it is refused with a
// *SecretsError when the commits add credential-looking text.
func (g *Git) PushSelfcodeBranch(ctx context.Context, ws *Workspace, branch, expectedRemoteSHA string, token TokenSource) error {
	if err := validBranch(branch); err != nil {
		return err
	}
	if !strings.HasPrefix(branch, SelfcodeBranchPrefix) {
		return fmt.Errorf("force-push to %q: only %s branches: %w", branch, SelfcodeBranchPrefix, ErrBranchNotAllowed)
	}
	if expectedRemoteSHA != "" && !shaRE.MatchString(expectedRemoteSHA) {
		return fmt.Errorf("expected remote sha %q: %w", expectedRemoteSHA, ErrInvalidName)
	}
	ref := "refs/heads/" + branch
	return g.push(ctx, ws, token, "--force-with-lease="+ref+":"+expectedRemoteSHA, "HEAD:"+ref)
}

// PushFastForward pushes the workspace's HEAD to branch without ever forcing,
// for adding commits to a pull request branch selfcode did not create. If the
// branch has moved on, it returns ErrNonFastForward so the caller can rebuild
// on the new head or stop.
func (g *Git) PushFastForward(ctx context.Context, ws *Workspace, branch string, token TokenSource) error {
	if err := validBranch(branch); err != nil {
		return err
	}
	return g.push(ctx, ws, token, "HEAD:refs/heads/"+branch)
}

// push publishes the workspace's HEAD, once the commits it adds since the
// workspace's base are scanned for credentials (a *SecretsError refuses it).
func (g *Git) push(ctx context.Context, ws *Workspace, token TokenSource, args ...string) error {
	remote, err := parseRemote(ws.remote)
	if err != nil {
		return err
	}
	if err := g.checkSecrets(ctx, ws); err != nil {
		return err
	}
	full := append([]string{"push", "--porcelain", "--no-verify", "origin"}, args...)
	res, err := g.wsRun(ctx, ws, call{args: full, token: token, remote: remote})
	if err != nil {
		if kind := pushRejection(string(res.stdout)); kind != nil {
			return fmt.Errorf("push %s: %w", args[len(args)-1], kind)
		}
		return fmt.Errorf("push: %w", err)
	}
	g.log.InfoContext(ctx, "pushed", "repo", ws.Repo.FullName(), "workspace", ws.ID, "refspec", args[len(args)-1])
	return nil
}

// pushRejection maps a rejected ref in `git push --porcelain` output
// ("!\t<src>:<dst>\t[rejected] (reason)") to an error kind.
func pushRejection(porcelain string) error {
	for _, line := range strings.Split(porcelain, "\n") {
		if !strings.HasPrefix(line, "!\t") {
			continue
		}
		switch {
		case strings.Contains(line, "(stale info)"):
			return ErrLeaseRejected
		case strings.Contains(line, "(non-fast-forward)"), strings.Contains(line, "(fetch first)"):
			return ErrNonFastForward
		case strings.Contains(line, "[remote rejected]"):
			return fmt.Errorf("%w: %s", ErrRemoteRejected, strings.TrimSpace(line[strings.LastIndex(line, "\t")+1:]))
		}
	}
	return nil
}
