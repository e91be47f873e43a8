package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/selfcode/selfcode/internal/atomicfile"
)

// cacheVersion changes when the stored format or the key does.
const cacheVersion = 3

// Cache errors callers may branch on.
var (
	// ErrCacheKey: the key is incomplete or unsafe (SHA: 4–64 hex digits;
	// config hash: 1–128 of [A-Za-z0-9_-]; a repository is required).
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

// Key names a stored baseline by everything its run depends on.
type Key struct {
	// Repository owns the baseline: entries are never shared between
	// repositories, so a fork with the same commits reads none of its
	// parent's (OWNER/NAME, or a local run's cache name).
	Repository string
	SHA        string // the commit verified (or any hex naming the tree as surely)
	Config     string // the hash of the configuration as it ran
	// Image is the sandbox image's ID: a rebuilt image is another key.
	// The pipeline keeps nothing when the sandbox cannot say it.
	Image string
}

// Cache stores base-commit Runs by Key as JSON files
// `<Dir>/<sha>-<digest of repository, config and image>.json`. Writes go to a
// temporary file renamed into place, so concurrent Get and Put from any
// number of goroutines (or processes) see either a whole entry or none.
type Cache struct {
	dir string
}

// cacheEntry is the stored form: the whole key, checked on every read.
type cacheEntry struct {
	Version    int    `json:"version"`
	Repository string `json:"repository"`
	SHA        string `json:"sha"`
	ConfigHash string `json:"config_hash"`
	Image      string `json:"image,omitempty"`
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

func (c *Cache) path(k Key) (string, error) {
	if !shaRE.MatchString(k.SHA) || !hashRE.MatchString(k.Config) || k.Repository == "" {
		return "", fmt.Errorf("%w: repository %q, sha %q, config hash %q", ErrCacheKey, k.Repository, k.SHA, k.Config)
	}
	sum := sha256.Sum256([]byte(k.Repository + "\x00" + k.Config + "\x00" + k.Image))
	return filepath.Join(c.dir, k.SHA+"-"+hex.EncodeToString(sum[:16])+".json"), nil
}

// Get returns the cached base Run for the key. A missing entry is a miss
// (false, nil); an unreadable or corrupt one is a miss with an error, and
// the caller should run the baseline.
func (c *Cache) Get(k Key) (Run, bool, error) {
	p, err := c.path(k)
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
	if e.Version != cacheVersion || e.Repository != k.Repository || e.SHA != k.SHA || e.ConfigHash != k.Config || e.Image != k.Image {
		return Run{}, false, nil
	}
	return e.Run, true, nil
}

// Put stores run as the base Run for the key, replacing any entry.
func (c *Cache) Put(k Key, run Run) error {
	p, err := c.path(k)
	if err != nil {
		return err
	}
	for _, cmd := range run.Commands {
		if cmd.Error != "" || cmd.Skipped {
			return fmt.Errorf("%w: command %q was not run", ErrIncompleteRun, cmd.Name)
		}
	}
	data, err := json.Marshal(cacheEntry{Version: cacheVersion, Repository: k.Repository, SHA: k.SHA, ConfigHash: k.Config,
		Image: k.Image, Run: run})
	if err != nil {
		return fmt.Errorf("encode baseline cache entry: %w", err)
	}
	if err := atomicfile.Write(p, data); err != nil {
		return fmt.Errorf("baseline cache entry: %w", err)
	}
	return nil
}
