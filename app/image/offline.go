package image

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// offline runs build-offline.sh from the recipe (written beside warm.sh and
// the Dockerfile, whose image it also accepts as current, in a scratch
// directory, so a release binary needs no checkout) with its progress on
// Progress.
func (b *Builder) offline(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "selfcode-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{OfflineScript, WarmScript, Dockerfile} {
		data, err := fs.ReadFile(b.opts.Recipe, name)
		if err != nil {
			return fmt.Errorf("read the recipe: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			return err
		}
	}
	args := []string{filepath.Join(dir, OfflineScript), "--image", b.opts.Image}
	if b.opts.Force {
		args = append(args, "--force")
	}
	cmd := exec.CommandContext(ctx, b.opts.Shell, args...)
	cmd.Env = b.scriptEnviron()
	cmd.Stdout, cmd.Stderr = b.opts.Progress, b.opts.Progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w offline (build-offline.sh): %w", ErrCannotBuild, err)
	}
	return nil
}
