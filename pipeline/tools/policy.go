package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/selfcode/selfcode/pipeline/repoconfig"
)

// Policy says which repository paths the model may read, write and delete.
// Globs use doublestar syntax relative to the checkout root; a glob that
// matches a directory also covers everything below it.
//
//   - Allow: paths the model may create, modify or delete; empty means
//     ["**"]. Reading is not limited by Allow, so the model can still look
//     at the files around the ones it may change.
//   - Deny: never read or written; view and search skip them too.
//   - Protected: may be edited, never deleted.
//   - GitHub: paths under .github/ the repository opted back in
//     (paths.github_opt_in, checked by repoconfig.CheckGitHubOptIn: each
//     names a file or folder directly under .github/ literally, never
//     workflows or actions); Allow, Deny and Protected then apply to
//     them as to any path.
//
// Always off-limits, whatever the globs say: any .git directory,
// .github/** (what CI runs with the repository's secrets: workflows,
// composite actions and the rest) except what GitHub opts in,
// .selfcode.yml (all compared case-insensitively), absolute paths, paths
// with a ".." element and symlinks leading out of the checkout.
type Policy struct {
	Allow     []string
	Deny      []string
	Protected []string
	GitHub    []string
}

// Validate reports the first invalid glob.
func (p Policy) Validate() error {
	for _, set := range []struct {
		name  string
		globs []string
	}{{"allow", p.Allow}, {"deny", p.Deny}, {"protected", p.Protected}, {"github_opt_in", p.GitHub}} {
		for _, g := range set.globs {
			if g == "" || !doublestar.ValidatePattern(g) {
				return fmt.Errorf("invalid %s glob %q", set.name, g)
			}
		}
	}
	for _, g := range p.GitHub {
		if msg := repoconfig.CheckGitHubOptIn(g); msg != "" {
			return fmt.Errorf("github_opt_in: %s", msg)
		}
	}
	return nil
}

// Access is what a policy decides about one path.
type Access int

// Decisions, from most to least restrictive.
const (
	// OffLimits: always refused (.git, .github unless opted in,
	// .selfcode.yml).
	OffLimits Access = iota
	// Denied: matches a deny glob.
	Denied
	// ReadOnly: readable, outside every allow glob.
	ReadOnly
	// Protected: readable and writable, never deleted.
	Protected
	// Writable: readable, writable, deletable.
	Writable
)

// Check decides about a clean, slash-separated path relative to the root
// ("." is the root itself). It does not look at the disk.
func (p Policy) Check(rel string) Access {
	if offLimits(rel) || (underGitHub(rel) && !p.optedIn(rel)) {
		return OffLimits
	}
	if rel == ".github" {
		return ReadOnly // listed for what is opted in below it, never a file
	}
	if matchSelfOrParent(p.Deny, rel) {
		return Denied
	}
	allow := p.Allow
	if len(allow) == 0 {
		allow = []string{"**"}
	}
	if !matchSelfOrParent(allow, rel) {
		return ReadOnly
	}
	if matchSelfOrParent(p.Protected, rel) {
		return Protected
	}
	return Writable
}

// CanRead is Check(rel) >= ReadOnly.
func (p Policy) CanRead(rel string) bool { return p.Check(rel) >= ReadOnly }

// offLimits: what no configuration makes available (.git anywhere,
// .selfcode.yml, and what CI runs directly: .github/workflows and
// .github/actions).
func offLimits(rel string) bool {
	lower := strings.ToLower(rel)
	for _, part := range strings.Split(lower, "/") {
		if part == ".git" {
			return true
		}
	}
	if lower == ".selfcode.yml" {
		return true
	}
	for _, dir := range repoconfig.GitHubNever {
		if lower == ".github/"+dir || strings.HasPrefix(lower, ".github/"+dir+"/") {
			return true
		}
	}
	return false
}

// underGitHub reports rel is .github or below it, in any case.
func underGitHub(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	return strings.EqualFold(first, ".github")
}

// optedIn reports whether the repository opted rel (under .github) back
// in: an opt-in glob matches it or a folder above it, or rel is .github
// itself and something below it is opted in (so that it can be listed).
// An invalid opt-in (Validate) counts for nothing.
func (p Policy) optedIn(rel string) bool {
	var valid []string
	for _, g := range p.GitHub {
		if repoconfig.CheckGitHubOptIn(g) == "" {
			valid = append(valid, g)
		}
	}
	if rel == ".github" {
		return len(valid) > 0
	}
	return matchSelfOrParent(valid, rel)
}

// matchSelfOrParent reports whether rel or one of its parent directories
// matches a glob.
func matchSelfOrParent(globs []string, rel string) bool {
	if len(globs) == 0 {
		return false
	}
	for p := rel; ; {
		for _, g := range globs {
			if ok, _ := doublestar.Match(g, p); ok {
				return true
			}
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// errDenied marks a refusal by policy (outcome "denied").
var errDenied = errors.New("denied")

// target is a checked path inside the checkout.
type target struct {
	rel    string // clean, slash-separated, relative to the root
	abs    string // absolute path to use on disk
	access Access
}

// intent is what a call wants to do with a path.
type intent int

const (
	forRead intent = iota
	forWrite
	forDelete
)

// resolve checks a path argument from the model against the policy and the
// disk. Reads may pass through symlinks whose targets stay inside the
// checkout (the target must be readable too); writes and deletes never pass
// through a symlink at all, so an edit always lands on the path the model
// named.
func (t *Tools) resolve(arg string, want intent) (target, error) {
	if arg == "" {
		return target{}, fmt.Errorf("path is empty")
	}
	if strings.ContainsRune(arg, 0) {
		return target{}, fmt.Errorf("%w: path contains a NUL byte", errDenied)
	}
	if strings.HasPrefix(arg, "/") || filepath.IsAbs(arg) || strings.HasPrefix(arg, `\`) {
		return target{}, fmt.Errorf("%w: %s is absolute; paths are relative to the repository root", errDenied, arg)
	}
	for _, part := range strings.Split(strings.ReplaceAll(arg, `\`, "/"), "/") {
		if part == ".." {
			return target{}, fmt.Errorf("%w: %s leaves the repository (\"..\")", errDenied, arg)
		}
	}
	rel := path.Clean(arg)
	tg := target{rel: rel, abs: filepath.Join(t.root, filepath.FromSlash(rel)), access: t.policy.Check(rel)}
	if err := t.allowed(tg, want); err != nil {
		return target{}, err
	}
	if rel == "." {
		return tg, nil
	}
	// Walk the existing prefix looking for symlinks.
	parts := strings.Split(rel, "/")
	cur := t.root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			break
		}
		if err != nil {
			return target{}, fmt.Errorf("stat %s: %w", strings.Join(parts[:i+1], "/"), err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if want != forRead {
			return target{}, fmt.Errorf("%w: %s is a symlink; edit the file it points to instead", errDenied, strings.Join(parts[:i+1], "/"))
		}
		real, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return target{}, fmt.Errorf("%w: %s is a broken or looping symlink", errDenied, strings.Join(parts[:i+1], "/"))
		}
		inside, err := filepath.Rel(t.realRoot, real)
		if err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) || filepath.IsAbs(inside) {
			return target{}, fmt.Errorf("%w: %s is a symlink pointing outside the repository", errDenied, strings.Join(parts[:i+1], "/"))
		}
		// Re-check what the link leads to, then continue from there.
		rest := parts[i+1:]
		resolved := path.Join(append([]string{filepath.ToSlash(inside)}, rest...)...)
		if a := t.policy.Check(resolved); a < ReadOnly {
			return target{}, fmt.Errorf("%w: %s leads to %s, which is off-limits", errDenied, rel, resolved)
		}
		if len(rest) == 0 {
			break
		}
		sub, err := t.resolve(resolved, forRead)
		if err != nil {
			return target{}, err
		}
		tg.abs = sub.abs
		break
	}
	return tg, nil
}

func (t *Tools) allowed(tg target, want intent) error {
	switch {
	case tg.access == OffLimits:
		return fmt.Errorf("%w: %s is off-limits (.git, .github and .selfcode.yml are not available to change or read)", errDenied, tg.rel)
	case tg.access == Denied:
		return fmt.Errorf("%w: %s is excluded by the repository's deny list", errDenied, tg.rel)
	case want != forRead && tg.access == ReadOnly:
		return fmt.Errorf("%w: %s is outside the paths the repository allows to change", errDenied, tg.rel)
	case want == forDelete && tg.access == Protected:
		return fmt.Errorf("%w: %s is protected: it may be edited but not deleted", errDenied, tg.rel)
	case want != forRead && tg.rel == ".":
		return fmt.Errorf("the repository root is a directory, not a file")
	}
	return nil
}
