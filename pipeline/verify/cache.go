package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/selfcode/selfcode/internal/atomicfile"
)

// cacheVersion changes when the stored format does.
const cacheVersion = 2

// Cache errors callers may branch on.
var (
	// ErrCacheKey: the commit SHA or the config hash is not a safe file name
	// part (SHA: 4–64 hex digits; hash: 1–128 of [A-Za-z0-9_-]).
	ErrCacheKey = errors.New("invalid baseline cache key")
	// ErrIncompleteRun: Put refuses a Run in which a command could not be
	// run; such a baseline would excuse nothing reliably.
	ErrIncompleteRun = errors.New("baseline run is incomplete")
)

var (
	shaRE  = regexp.MustCompile(`^[0-9a-fA-F]{4,64}$`)
	hashRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
)

// CacheOptions configures a Cache.
type CacheOptions struct {
	// Dir holds the entries, one file per key; created (0700) if missing.
	Dir string
}

// Cache stores base-commit Runs keyed by (commit SHA, verify-config hash)
// as JSON files `<Dir>/<sha>-<hash>.json`. Writes go to a temporary file
// renamed into place, so concurrent Get and Put from any number of
// goroutines (or processes) see either a whole entry or none.
type Cache struct {
	dir string
}

// cacheEntry is the stored form.
type cacheEntry struct {
	Version    int    `json:"version"`
	SHA        string `json:"sha"`
	ConfigHash string `json:"config_hash"`
	Run        Run    `json:"run"`
}

// NewCache opens (creating if needed) the cache directory.
func NewCache(opts CacheOptions) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("baseline cache: no directory given")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create baseline cache directory: %w", err)
	}
	return &Cache{dir: opts.Dir}, nil
}

func (c *Cache) path(sha, configHash string) (string, error) {
	if !shaRE.MatchString(sha) || !hashRE.MatchString(configHash) {
		return "", fmt.Errorf("%w: sha %q, config hash %q", ErrCacheKey, sha, configHash)
	}
	return filepath.Join(c.dir, sha+"-"+configHash+".json"), nil
}

// Get returns the cached base Run for the key. A missing entry is a miss
// (false, nil); an unreadable or corrupt one is a miss with an error, and
// the caller should run the baseline.
func (c *Cache) Get(sha, configHash string) (Run, bool, error) {
	p, err := c.path(sha, configHash)
	if err != nil {
		return Run{}, false, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Run{}, false, nil
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("read baseline cache entry: %w", err)
	}
	var e cacheEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return Run{}, false, fmt.Errorf("decode baseline cache entry %s: %w", filepath.Base(p), err)
	}
	if e.Version != cacheVersion || e.SHA != sha || e.ConfigHash != configHash {
		return Run{}, false, nil
	}
	return e.Run, true, nil
}

// Put stores run as the base Run for the key, replacing any entry.
func (c *Cache) Put(sha, configHash string, run Run) error {
	p, err := c.path(sha, configHash)
	if err != nil {
		return err
	}
	for _, cmd := range run.Commands {
		if cmd.Error != "" || cmd.Skipped {
			return fmt.Errorf("%w: command %q was not run", ErrIncompleteRun, cmd.Name)
		}
	}
	data, err := json.Marshal(cacheEntry{Version: cacheVersion, SHA: sha, ConfigHash: configHash, Run: run})
	if err != nil {
		return fmt.Errorf("encode baseline cache entry: %w", err)
	}
	if err := atomicfile.Write(p, data); err != nil {
		return fmt.Errorf("baseline cache entry: %w", err)
	}
	return nil
}
