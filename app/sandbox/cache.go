package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
)

// Per-repository caches. A job container of a repository mounts that
// repository's own named volume at the directory the image names with
// ImageCacheLabel; the Go build and module caches and the npm and pip
// caches live there, so the second job of a repository starts warm. A
// cache belongs to one repository and one image: it is never shared
// between repositories (a repository can only spoil its own cache), a new
// image starts new caches (the old ones are removed), and the least
// recently used caches are removed once their total passes
// CacheOptions.MaxBytes. The image pre-fills the directory (the Go
// standard library compiled), and the engine copies that into each new
// cache volume.
const (
	// ImageCacheLabel, on an image, names the directory (owned by the
	// sandbox user) where caches are mounted; images without it get none.
	ImageCacheLabel = "io.selfcode.cache"
	LabelCache      = "selfcode.cache"       // on cache volumes: the repository
	LabelCacheImage = "selfcode.cache.image" // on cache volumes: the image ID
)

// CacheOptions configure the per-repository caches.
type CacheOptions struct {
	// MaxBytes caps the caches' total size; past it the least recently
	// used ones are removed. Zero turns caches off.
	MaxBytes int64
	// Index is the file that remembers when each cache was last used (in
	// selfcode's data directory); empty keeps it in memory only.
	Index string
}

// CacheInfo describes one repository's cache.
type CacheInfo struct {
	Repository string    `json:"repository"`
	Volume     string    `json:"volume"`
	Image      string    `json:"image"`
	Size       int64     `json:"size"` // bytes; -1 when the engine does not say
	LastUsed   time.Time `json:"last_used"`
}

// cacheEntry is what the index remembers of a cache.
type cacheEntry struct {
	LastUsed time.Time `json:"last_used"`
	// Size is the cache's size when a job last closed its container
	// (measured inside it), for engines that do not report volume sizes.
	Size int64 `json:"size,omitempty"`
}

// cacheMount is the cache a container mounts.
type cacheMount struct {
	volume, dir string
}

// cacheEnv points the toolchains' caches into dir.
func cacheEnv(dir string) map[string]string {
	return map[string]string{
		"GOCACHE":          path.Join(dir, "go-build"),
		"GOMODCACHE":       path.Join(dir, "gomod"),
		"PIP_CACHE_DIR":    path.Join(dir, "pip"),
		"npm_config_cache": path.Join(dir, "npm"),
	}
}

// cacheVolumeName is the volume of repository's cache on imageID.
func cacheVolumeName(repository, imageID string) string {
	sum := sha256.Sum256([]byte(repository + "\x00" + imageID))
	return "selfcode-cache-" + hex.EncodeToString(sum[:8])
}

// cacheFor returns the cache volume of repository for image, creating it
// and removing the repository's caches of other images. nil: the image has
// no cache directory, or caches are off.
func (m *Manager) cacheFor(ctx context.Context, repository, image string) (*cacheMount, error) {
	if m.opts.Cache.MaxBytes <= 0 || repository == "" {
		return nil, nil
	}
	img, err := m.api.ImageInspect(ctx, image)
	if err != nil {
		return nil, fmt.Errorf("inspect image %s: %w", image, err)
	}
	dir := ""
	if img.Config != nil {
		dir = img.Config.Labels[ImageCacheLabel]
	}
	if !m.cacheDirAllowed(dir) {
		if dir != "" {
			m.log.Warn("image names a cache directory selfcode does not mount there", "image", image, "dir", dir)
		}
		return nil, nil
	}
	name := cacheVolumeName(repository, img.ID)
	m.touchCache(name)
	if _, err := m.api.VolumeInspect(ctx, name); err == nil {
		return &cacheMount{volume: name, dir: dir}, nil
	} else if !errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("inspect cache volume: %w", err)
	}
	// The repository's first job on this image: a new cache, and its caches
	// of other images go.
	if _, err := m.api.VolumeCreate(ctx, volume.CreateOptions{Name: name,
		Labels: map[string]string{LabelCache: repository, LabelCacheImage: img.ID}}); err != nil {
		return nil, fmt.Errorf("create cache volume: %w", err)
	}
	old, err := m.api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelCache+"="+repository))})
	if err == nil {
		for _, v := range old.Volumes {
			if v != nil && v.Name != name && v.Labels[LabelCacheImage] != img.ID {
				if err := m.api.VolumeRemove(ctx, v.Name, false); err == nil {
					m.log.Info("cache of an older image removed", "repo", repository, "volume", v.Name)
				}
			}
		}
	}
	return &cacheMount{volume: name, dir: dir}, nil
}

// cacheDirAllowed reports whether dir may hold a cache mount: an absolute,
// clean path outside the work tree, /tmp and the kernel's file systems.
func (m *Manager) cacheDirAllowed(dir string) bool {
	if dir == "" || !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" {
		return false
	}
	within := func(root string) bool {
		return dir == root || strings.HasPrefix(dir, root+"/") || strings.HasPrefix(root, dir+"/")
	}
	for _, root := range []string{m.opts.Workdir, "/tmp", "/proc", "/sys", "/dev", "/etc", "/usr", "/bin", "/sbin", "/lib"} {
		if within(root) {
			return false
		}
	}
	return true
}

// touchCache records that a cache was used now.
func (m *Manager) touchCache(name string) {
	m.updateIndex(name, func(e *cacheEntry) { e.LastUsed = time.Now().UTC() })
}

// updateIndex changes a cache's entry in the index and saves it.
func (m *Manager) updateIndex(name string, fn func(*cacheEntry)) {
	m.editIndex(func(idx map[string]cacheEntry) {
		e := idx[name]
		fn(&e)
		idx[name] = e
	})
}

// editIndex loads the index, lets fn change it, and saves it.
func (m *Manager) editIndex(fn func(map[string]cacheEntry)) {
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	idx := m.loadIndexLocked()
	fn(idx)
	m.saveIndexLocked(idx)
}

// measureCache records the cache's size from inside the container that
// used it (`du`), before the container goes, and reports whether it did
// (the cache may have grown past the cap: Close then evicts).
func (c *Container) measureCache(ctx context.Context) bool {
	if c.cache == nil || c.usable() != nil {
		return false
	}
	r, err := c.Exec(ctx, Cmd{Run: "du -sk " + c.cache.dir + " 2>/dev/null | cut -f1", Timeout: 30 * time.Second})
	if err != nil || r.ExitCode != 0 {
		return false
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(r.Stdout), 10, 64)
	if err != nil {
		return false
	}
	c.m.updateIndex(c.cache.volume, func(e *cacheEntry) { e.Size = kib << 10 })
	return true
}

// loadIndexLocked returns the index: read from its file each time (the
// server and `selfcode cache` share it), or kept in memory without one.
func (m *Manager) loadIndexLocked() map[string]cacheEntry {
	f := m.opts.Cache.Index
	if f == "" {
		if m.cacheIndex == nil {
			m.cacheIndex = map[string]cacheEntry{}
		}
		return m.cacheIndex
	}
	idx := map[string]cacheEntry{}
	if b, err := os.ReadFile(f); err == nil {
		if err := json.Unmarshal(b, &idx); err != nil {
			m.log.Warn("cache index unreadable; starting a new one", "file", filepath.Base(f), "err", err)
			idx = map[string]cacheEntry{}
		}
	}
	return idx
}

func (m *Manager) saveIndexLocked(idx map[string]cacheEntry) {
	f := m.opts.Cache.Index
	if f == "" {
		return
	}
	b, err := json.Marshal(idx)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(f), 0o700)
	}
	if err == nil {
		tmp := f + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, f)
		}
	}
	if err != nil {
		m.log.Warn("write cache index", "file", filepath.Base(f), "err", err)
	}
}

// Caches lists the repositories' caches, least recently used first, each
// with the size it had when its last job ended (measured inside the job,
// so it needs no disk-usage call, which API proxies refuse; -1 before any
// job of it ended).
func (m *Manager) Caches(ctx context.Context) ([]CacheInfo, error) {
	list, err := m.api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelCache))})
	if err != nil {
		return nil, fmt.Errorf("list cache volumes: %w", err)
	}
	m.cacheMu.Lock()
	idx := m.loadIndexLocked()
	m.cacheMu.Unlock()
	var out []CacheInfo
	for _, v := range list.Volumes {
		if v == nil || v.Labels[LabelCache] == "" {
			continue
		}
		e := idx[v.Name]
		ci := CacheInfo{Repository: v.Labels[LabelCache], Volume: v.Name, Image: v.Labels[LabelCacheImage], Size: -1, LastUsed: e.LastUsed}
		if e.Size > 0 {
			ci.Size = e.Size
		}
		if ci.LastUsed.IsZero() {
			ci.LastUsed, _ = time.Parse(time.RFC3339, v.CreatedAt)
		}
		out = append(out, ci)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].LastUsed.Before(out[b].LastUsed) })
	return out, nil
}

// EvictCaches removes the least recently used caches until the total is
// within CacheOptions.MaxBytes (a cache a running job uses cannot be
// removed and is passed over, and one never measured is left alone: it
// counts for nothing in the total), forgets caches that are gone, and returns
// the volumes removed.
func (m *Manager) EvictCaches(ctx context.Context) ([]string, error) {
	if m.opts.Cache.MaxBytes <= 0 {
		return nil, nil
	}
	caches, err := m.Caches(ctx)
	if err != nil {
		return nil, err
	}
	var total int64
	live := map[string]bool{}
	for _, c := range caches {
		total += max(c.Size, 0)
		live[c.Volume] = true
	}
	m.editIndex(func(idx map[string]cacheEntry) {
		for name := range idx {
			if !live[name] {
				delete(idx, name)
			}
		}
	})
	var removed []string
	for _, c := range caches {
		if total <= m.opts.Cache.MaxBytes {
			break
		}
		if c.Size <= 0 {
			// Never measured (its job never ended here): removing it would
			// not bring the measured total down.
			continue
		}
		if err := m.api.VolumeRemove(ctx, c.Volume, false); err != nil {
			if !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
				m.log.Warn("evict cache", "repo", c.Repository, "volume", c.Volume, "err", err)
			}
			continue
		}
		total -= max(c.Size, 0)
		removed = append(removed, c.Volume)
		m.forget(c.Volume)
		m.log.Info("cache evicted", "repo", c.Repository, "volume", c.Volume, "bytes", c.Size)
	}
	return removed, nil
}

// ClearCaches removes the caches of repository ("" for all) that are not in
// use, and returns how many were removed and how many are in use.
func (m *Manager) ClearCaches(ctx context.Context, repository string) (removed, inUse int, err error) {
	if repository != "" {
		if err := CheckRepository(repository); err != nil {
			return 0, 0, err
		}
	}
	f := filters.NewArgs(filters.Arg("label", LabelCache))
	if repository != "" {
		f = filters.NewArgs(filters.Arg("label", LabelCache+"="+repository))
	}
	list, err := m.api.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return 0, 0, fmt.Errorf("list cache volumes: %w", err)
	}
	for _, v := range list.Volumes {
		if v == nil {
			continue
		}
		if err := m.api.VolumeRemove(ctx, v.Name, false); err != nil {
			if errdefs.IsConflict(err) {
				inUse++
				continue
			}
			if errdefs.IsNotFound(err) {
				continue
			}
			return removed, inUse, fmt.Errorf("remove cache %s: %w", v.Name, err)
		}
		removed++
		m.forget(v.Name)
	}
	return removed, inUse, nil
}

// CheckRepository refuses a repository name that is not OWNER/NAME (a
// cache's owner, as the CLI and the dashboard name it), with ErrInvalid.
func CheckRepository(repository string) error {
	owner, name, ok := strings.Cut(repository, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(repository, " \t\r\n") || strings.Contains(name, "/") {
		return fmt.Errorf("%w: repository %q is not OWNER/NAME", ErrInvalid, repository)
	}
	return nil
}

func (m *Manager) forget(volume string) {
	m.editIndex(func(idx map[string]cacheEntry) { delete(idx, volume) })
}

// evictSoon evicts in the background after a container that used a cache
// closed; one eviction at a time, Manager.Close waits for it.
func (m *Manager) evictSoon() {
	if !m.evicting.CompareAndSwap(false, true) {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		defer m.evicting.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := m.EvictCaches(ctx); err != nil {
			m.log.Warn("cache eviction", "err", err)
		}
	}()
}
