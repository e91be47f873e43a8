package eval

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/selfcode/selfcode/app/gitops"
)

// git runs a hardened git command in dir and returns its output.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := gitops.Command(ctx, dir, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

// gitLine runs git and returns its output as one trimmed line.
func gitLine(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := git(ctx, dir, args...)
	return strings.TrimSpace(string(out)), err
}
