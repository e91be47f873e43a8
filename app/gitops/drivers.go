package gitops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// driverCache keeps each git directory's driverOptions with a digest of
// every file its configuration was read from or could be (the repository's
// config, config.worktree and commondir, HEAD for an includeIf onbranch:,
// each included file, each file an include names that is missing), so
// that a workspace's git calls run `git config` once rather than before
// every call, and again as soon as any of those files changes in any way:
// a driver planted after a read is overridden by the next call all the
// same.
type driverCache struct {
	mu sync.Mutex
	m  map[string]driverEntry // by git directory
}

type driverEntry struct {
	files []string // what stamp covers
	stamp string
	opts  []string
}

// maxDriverEntries bounds the cache (one entry per workspace's git
// directory; a removed workspace's is never asked for again).
const maxDriverEntries = 256

// maxDigestedFiles bounds the files a git directory's configuration may
// come from and still be kept (includes of includes).
const maxDigestedFiles = 32

// maxConfigFileBytes: a configuration file larger than this is not
// digested, and the directory's options are read before every call.
const maxConfigFileBytes = 1 << 20

// options are driverOptions(gitPath, gitDir), read again only when a file
// they depend on changed.
func (d *driverCache) options(ctx context.Context, gitPath, gitDir string) ([]string, error) {
	d.mu.Lock()
	e, ok := d.m[gitDir]
	d.mu.Unlock()
	if ok {
		if s, err := stamp(e.files); err == nil && s == e.stamp {
			return e.opts, nil
		}
	}
	files := []string{filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree"),
		filepath.Join(gitDir, "commondir"), filepath.Join(gitDir, "HEAD")}
	for {
		// Digested before the read: a change made during it makes the
		// digest stale, and the next call reads again.
		before, stampErr := stamp(files)
		opts, read, err := readDrivers(ctx, gitPath, gitDir)
		if err != nil {
			return nil, err
		}
		opts = slices.Clip(opts) // a caller's append copies
		n := len(files)
		for _, f := range read {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		switch {
		case stampErr != nil:
			return opts, nil // not kept: read again next time
		case len(files) > n && len(files) <= maxDigestedFiles:
			// The configuration came from files not digested: digest them
			// too, and read again (an include chain adds a file a round).
			continue
		case len(files) > n:
			return opts, nil
		}
		d.mu.Lock()
		if d.m == nil || len(d.m) >= maxDriverEntries {
			d.m = map[string]driverEntry{}
		}
		d.m[gitDir] = driverEntry{files: files, stamp: before, opts: opts}
		d.mu.Unlock()
		return opts, nil
	}
}

// stamp digests the files' contents (a missing file is one state more).
func stamp(files []string) (string, error) {
	h := sha256.New()
	for _, f := range slices.Sorted(slices.Values(files)) {
		fmt.Fprintf(h, "%d\x00%s\x00", len(f), f)
		info, err := os.Stat(f)
		if errors.Is(err, fs.ErrNotExist) {
			h.Write([]byte{0})
			continue
		}
		if err != nil {
			return "", err
		}
		if !info.Mode().IsRegular() || info.Size() > maxConfigFileBytes {
			return "", fmt.Errorf("%s: not a small regular file", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\x01%d\x00", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
