package gitops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/selfcode/selfcode/app/secretscan"
)

// SecretScanner finds credentials in the lines a diff adds and returns the
// diff with them replaced (*secretscan.Scanner).
type SecretScanner interface {
	Scan(ctx context.Context, diff string) ([]secretscan.Finding, string)
}

// ErrSecretFound: the commits to push add text that looks like a
// credential; nothing was pushed. The error is a *SecretsError.
var ErrSecretFound = errors.New("push refused: the change adds what looks like a credential")

// SecretsError names where the change adds credential-looking text: file,
// line and rule, never the value.
type SecretsError struct {
	Findings []secretscan.Finding
}

func (e *SecretsError) Error() string {
	where := make([]string, 0, len(e.Findings))
	for _, f := range e.Findings {
		where = append(where, f.String())
	}
	return ErrSecretFound.Error() + " at " + strings.Join(where, ", ")
}

// Is reports whether target is ErrSecretFound.
func (e *SecretsError) Is(target error) bool { return target == ErrSecretFound }

// checkSecrets scans what the push would publish — each commit from the
// workspace's base to HEAD, so that one a later commit undoes is still
// seen — and refuses with a *SecretsError. --text shows every file's
// content whatever its attributes say: a .gitattributes of the change
// marking files `-diff` or `binary` (or content git takes for binary)
// would otherwise leave only "Binary files differ" to scan.
func (g *Git) checkSecrets(ctx context.Context, ws *Workspace) error {
	res, err := g.wsRun(ctx, ws, call{args: []string{"log", "--format=", "--patch", "--no-color", "--no-ext-diff", "--no-textconv",
		"--no-renames", "--text", ws.BaseSHA + "..HEAD", "--"}})
	if err != nil {
		return fmt.Errorf("read the change to scan it for credentials: %w", err)
	}
	if found, _ := g.secrets.Scan(ctx, string(res.stdout)); len(found) > 0 {
		g.log.WarnContext(ctx, "push refused: credential-looking text", "repo", ws.Repo.FullName(), "workspace", ws.ID,
			"findings", len(found), "first", found[0].String())
		return &SecretsError{Findings: found}
	}
	return nil
}

// RedactSecrets returns diff with every credential-looking value it adds
// replaced by secretscan.Redacted, for keeping it (the job's diff.patch).
func (g *Git) RedactSecrets(ctx context.Context, diff string) string {
	_, redacted := g.secrets.Scan(ctx, diff)
	return redacted
}
