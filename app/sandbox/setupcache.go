package sandbox

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// What setup adds to the work tree (node_modules, a virtual environment,
// an egg-info) is kept in the repository's cache under deps/<key>, the key
// naming the dependency manifests and setup commands it came from, and
// copied into a later job of the same repository instead of running setup
// again. Only the repository's own jobs read its cache, so a repository can
// spoil only its own setup; a change to a manifest is another key.
//
// Only dependency directories are kept, as only they follow from the
// manifests alone: when setup wrote or changed any file outside them (the
// build output of the sources: a C extension's .so from `pip install -e`,
// dist/ from an npm prepare script), nothing is kept, and setup runs in
// every job — such output restored for a later commit with other sources
// would have its tests run against a stale build.

// depDirRE names dependency directories: node_modules, a virtual
// environment (.venv, venv), a package's egg-info, .eggs, __pycache__. A
// path is a dependency when any of its parts is one.
// (An awk regular expression with no backslash, which awk -v would
// take for an escape.)
const depDirRE = `^(node_modules|[.]venv|venv|[.]eggs|__pycache__|.*[.]egg-info)$`

// setupKeyRE is what a setup key looks like (hex, from the pipeline).
var setupKeyRE = regexp.MustCompile(`^[0-9a-f]{16,64}$`)

// Files in the container that hold the work tree's listing before setup.
const (
	treeBefore = "/tmp/.selfcode-tree-before"
	setupMade  = "/tmp/.selfcode-setup-made"
)

// RestoreSetup copies in what an earlier job's setup with key added to the
// work tree, and reports whether there was one. When there was not, it
// lists the work tree, so that SaveSetup can tell setup's outputs from the
// checkout: call it after CopyTree and before setup. Without a cache it
// reports false.
func (c *Container) RestoreSetup(ctx context.Context, key string) (bool, error) {
	if c.cache == nil {
		return false, nil
	}
	if !setupKeyRE.MatchString(key) {
		return false, fmt.Errorf("%w: setup key %q", ErrInvalid, key)
	}
	w, d := c.m.opts.Workdir, c.cache.dir+"/deps/"+key
	script := fmt.Sprintf(`set -eu
if [ -f %[2]s/complete ]; then
	touch %[2]s
	cp -a -n %[2]s/tree/. %[1]s/
	echo restored
	exit 0
fi
find %[1]s -mindepth 1 -path %[1]s/.git -prune -o -print | LC_ALL=C sort > %[3]s
`, w, d, treeBefore)
	// A setup command: it may run while the setup network is attached.
	r, err := c.Exec(ctx, Cmd{Run: script, Timeout: 10 * time.Minute, Setup: true})
	if err != nil {
		return false, err
	}
	if r.ExitCode != 0 {
		return false, fmt.Errorf("restore setup from the cache: exit %d: %s", r.ExitCode, strings.TrimSpace(r.Output))
	}
	return strings.TrimSpace(r.Stdout) == "restored", nil
}

// SaveSetup keeps what setup added to the work tree since RestoreSetup
// listed it (new paths whose parent existed before) under key, unless
// another job kept it first or setup wrote or changed a file outside
// dependency directories (depDirRE); keys unused for an hour are removed.
// Without a cache, or a listing, it does nothing.
func (c *Container) SaveSetup(ctx context.Context, key string) error {
	if c.cache == nil {
		return nil
	}
	if !setupKeyRE.MatchString(key) {
		return fmt.Errorf("%w: setup key %q", ErrInvalid, key)
	}
	w, d := c.m.opts.Workdir, c.cache.dir+"/deps"
	script := fmt.Sprintf(`set -eu
[ -f %[3]s ] || exit 0
find %[1]s -mindepth 1 -path %[1]s/.git -prune -o -print | LC_ALL=C sort > %[3]s.after
# New paths whose parent is not new: the tops of what setup made. A name
# with a line break in it cannot be listed this way: keep nothing then.
LC_ALL=C comm -13 %[3]s %[3]s.after | awk -v w=%[1]s 'NR == FNR { old[$0] = 1; next }
	{ p = $0; sub("/[^/]*$", "", p); if (p == w || (p in old)) print substr($0, length(w) + 2) }' %[3]s - > %[4]s
[ -s %[4]s ] || exit 0
if find %[1]s -name '*
*' | grep -q .; then exit 0; fi
# A file setup wrote or changed outside dependency directories is built
# from the sources, which the key does not name: keep nothing then.
if find %[1]s -mindepth 1 -path %[1]s/.git -prune -o ! -type d -newer %[3]s -print |
	awk -v w=%[1]s -v dep='%[6]s' '{ n = split(substr($0, length(w) + 2), part, "/"); ok = 0
		for (i = 1; i <= n; i++) if (part[i] ~ dep) ok = 1
		if (!ok) { found = 1; exit } }
	END { exit !found }'; then exit 0; fi
mkdir -p %[2]s
tmp=$(mktemp -d %[2]s/.tmp-XXXXXX)
mkdir "$tmp/tree"
tar -C %[1]s --verbatim-files-from -T %[4]s -cf - | tar -C "$tmp/tree" -xf -
touch "$tmp/complete"
mv -T "$tmp" %[2]s/%[5]s 2>/dev/null || rm -rf "$tmp"
find %[2]s -mindepth 1 -maxdepth 1 ! -name %[5]s -mmin +60 -exec rm -rf {} +
`, w, d, treeBefore, setupMade, key, depDirRE)
	r, err := c.Exec(ctx, Cmd{Run: script, Timeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("keep setup in the cache: exit %d: %s", r.ExitCode, strings.TrimSpace(r.Output))
	}
	return nil
}

// ForgetSetup removes what was kept under key (a kept setup that made tests
// fail where a fresh setup does not). Without a cache it does nothing.
func (c *Container) ForgetSetup(ctx context.Context, key string) error {
	if c.cache == nil {
		return nil
	}
	if !setupKeyRE.MatchString(key) {
		return fmt.Errorf("%w: setup key %q", ErrInvalid, key)
	}
	r, err := c.Exec(ctx, Cmd{Run: "rm -rf " + c.cache.dir + "/deps/" + key, Timeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("forget the kept setup: exit %d: %s", r.ExitCode, strings.TrimSpace(r.Output))
	}
	return nil
}
