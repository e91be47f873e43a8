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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/selfcode/selfcode/internal/atomicfile"
)

// cacheVersion changes when the stored format, the layout or the key
// does; a new version removes the files of older ones (NewCache).
const cacheVersion = 4

// DefaultCacheMaxBytes bounds the baseline cache when CacheOptions.MaxBytes
// is not set: past it, the least recently used entries are removed.
const DefaultCacheMaxBytes = 512 << 20

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
	shaRE     = regexp.MustCompile(`^[0-9a-fA-F]{4,64}$`)
	hashRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	versionRE = regexp.MustCompile(`^v[0-9]+$`)
)

// CacheOptions configures a Cache.
type CacheOptions struct {
	// Dir holds the entries; created (0700) if missing. It is the cache's
	// own: files of older cache versions in it are removed.
	Dir string
	// MaxBytes bounds the entries' total size: each Put removes the least
	// recently used (read or written) past it. Zero or less:
	// DefaultCacheMaxBytes.
	MaxBytes int64
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
// `<Dir>/v<version>/<digest of repository>/<sha>-<digest of config and
// image>.json`: one folder per repository, so that one repository's
// baselines are cleared alone (Clear). Writes go to a temporary file
// renamed into place, so concurrent Get and Put from any number of
// goroutines (or processes) see either a whole entry or none. A read
// marks an entry used (its modification time), and the least recently
// used go once the cache is past its size.
type Cache struct {
	dir      string // <Dir>/v<version>
	maxBytes int64
	evicting sync.Mutex // one eviction at a time in this process
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

// NewCache opens (creating if needed) the cache directory, and removes
// what older cache versions left in it.
func NewCache(opts CacheOptions) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("baseline cache: no directory given")
	}
	c := &Cache{dir: filepath.Join(opts.Dir, fmt.Sprintf("v%d", cacheVersion)), maxBytes: opts.MaxBytes}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultCacheMaxBytes
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create baseline cache directory: %w", err)
	}
	if err := removeOlderVersions(opts.Dir, filepath.Base(c.dir)); err != nil {
		return nil, fmt.Errorf("baseline cache: %w", err)
	}
	return c, nil
}

// removeOlderVersions removes from dir the folders of other cache versions
// and the entries of the versions before folders (<sha>-<digest>.json,
// and their temporary files).
func removeOlderVersions(dir, current string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		old := e.IsDir() && versionRE.MatchString(name) && name != current ||
			e.Type().IsRegular() && (strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".tmp-"))
		if !old {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("remove an older version's %s: %w", name, err)
		}
	}
	return nil
}

// repoDir is the folder of repository's entries.
func (c *Cache) repoDir(repository string) string {
	sum := sha256.Sum256([]byte(repository))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16]))
}

func (c *Cache) path(k Key) (string, error) {
	if !shaRE.MatchString(k.SHA) || !hashRE.MatchString(k.Config) || k.Repository == "" {
		return "", fmt.Errorf("%w: repository %q, sha %q, config hash %q", ErrCacheKey, k.Repository, k.SHA, k.Config)
	}
	sum := sha256.Sum256([]byte(k.Config + "\x00" + k.Image))
	return filepath.Join(c.repoDir(k.Repository), k.SHA+"-"+hex.EncodeToString(sum[:16])+".json"), nil
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
	now := time.Now()
	_ = os.Chtimes(p, now, now) // used: the last to go; an entry replaced meanwhile is as new
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
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("baseline cache entry: %w", err)
	}
	if err := atomicfile.Write(p, data); err != nil {
		return fmt.Errorf("baseline cache entry: %w", err)
	}
	if err := c.evict(p); err != nil {
		return fmt.Errorf("baseline cache eviction: %w", err)
	}
	return nil
}

// evict removes the least recently used entries (by modification time)
// while the entries' total size is past maxBytes, never keep, the one just
// written.
func (c *Cache) evict(keep string) error {
	c.evicting.Lock()
	defer c.evicting.Unlock()
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var entries []entry
	var total int64
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (Clear, another process)
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		entries = append(entries, entry{p, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if err != nil || total <= c.maxBytes {
		return err
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= c.maxBytes {
			break
		}
		if e.path == keep {
			continue
		}
		if err := os.Remove(e.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		total -= e.size
	}
	return nil
}

// Clear removes the baselines of repository ("" for every repository's)
// and returns how many it removed.
func (c *Cache) Clear(repository string) (int, error) {
	dirs := []string{c.repoDir(repository)}
	if repository == "" {
		entries, err := os.ReadDir(c.dir)
		if err != nil {
			return 0, fmt.Errorf("clear baselines: %w", err)
		}
		dirs = dirs[:0]
		for _, e := range entries {
			dirs = append(dirs, filepath.Join(c.dir, e.Name()))
		}
	}
	n := 0
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.json"))
		if err := os.RemoveAll(d); err != nil {
			return n, fmt.Errorf("clear baselines: %w", err)
		}
		n += len(files)
	}
	return n, nil
}
