package server

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Baselines opens the baseline cache under the data directory
// (DATA_DIR/baselines): the verified base commits, one folder per
// repository, the least recently used removed past its size.
func Baselines(cfg *config.Config) (*verify.Cache, error) {
	return verify.NewCache(verify.CacheOptions{Dir: filepath.Join(cfg.DataDir, "baselines")})
}

// Caches are what this server keeps per repository to go faster: the
// sandbox's cache volumes (Sandbox) and the verified baselines under the
// data directory (Baselines). The dashboard's cache page and `selfcode
// cache` list and clear them through it (handlers.CacheAdmin).
type Caches struct {
	Sandbox   *sandbox.Manager
	Baselines *verify.Cache
}

// Cleared is what a clear removed.
type Cleared struct {
	Volumes   int // sandbox cache volumes removed
	InUse     int // volumes a running job uses, left in place
	Baselines int // baselines removed
}

// Caches lists the sandbox's cache volumes, least recently used first.
func (c Caches) Caches(ctx context.Context) ([]sandbox.CacheInfo, error) {
	return c.Sandbox.Caches(ctx)
}

// ClearCaches clears repository's caches ("" for every repository's) as
// Clear does, and counts the volumes.
func (c Caches) ClearCaches(ctx context.Context, repository string) (removed, inUse int, err error) {
	r, err := c.Clear(ctx, repository)
	return r.Volumes, r.InUse, err
}

// Clear removes repository's ("" for every repository's) baselines — so a
// base verified when a test failed by chance is verified again — and its
// sandbox cache volumes that no running job uses. A repository name that
// is not OWNER/NAME is refused with sandbox.ErrInvalid, before anything is
// removed.
func (c Caches) Clear(ctx context.Context, repository string) (Cleared, error) {
	var r Cleared
	if repository != "" {
		if err := sandbox.CheckRepository(repository); err != nil {
			return r, err
		}
	}
	n, err := c.Baselines.Clear(repository)
	r.Baselines = n
	if err != nil {
		return r, fmt.Errorf("clear baselines: %w", err)
	}
	r.Volumes, r.InUse, err = c.Sandbox.ClearCaches(ctx, repository)
	return r, err
}
