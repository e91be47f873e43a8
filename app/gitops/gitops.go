package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/secretscan"
	"github.com/selfcode/selfcode/internal/keyedlock"
)

// TokenSource returns a credential for the remote, fetched fresh for each
// operation because installation tokens expire after an hour. A nil
// TokenSource means no credentials.
type TokenSource func(ctx context.Context) (string, error)

// StaticToken is a TokenSource that always returns tok.
func StaticToken(tok string) TokenSource {
	return func(context.Context) (string, error) { return tok, nil }
}

// Identity is who commits are authored and committed by.
type Identity struct {
	Name  string
	Email string
}

// BotIdentity is a GitHub App's commit identity: "<slug>[bot]" with its
// noreply address. botUserID is the id of the bot user (GET /users/<slug>[bot]),
// not the app id; with 0 the address has no id prefix.
func BotIdentity(slug string, botUserID int64) Identity {
	name := slug + "[bot]"
	if botUserID > 0 {
		return Identity{Name: name, Email: fmt.Sprintf("%d+%s@users.noreply.github.com", botUserID, name)}
	}
	return Identity{Name: name, Email: name + "@users.noreply.github.com"}
}

// Options configures a Git.
type Options struct {
	// Dir holds the mirrors and workspaces, normally <data dir>/git.
	Dir string
	// Identity authors and commits every commit.
	Identity Identity
	// GitPath is the git binary; default: "git" from PATH.
	GitPath string
	// BaseURL builds a repository's remote URL, <BaseURL><owner>/<name>.git,
	// when job.Repo.CloneURL is empty; default https://github.com/.
	BaseURL string
	// Logger receives debug lines per git call (never a token); default: discard.
	Logger *slog.Logger
	// Secrets scans every push for credentials; default: gitleaks' rules
	// (secretscan.New). A push that adds one is refused.
	Secrets SecretScanner
}

// Git runs git operations for selfcode. It is safe for concurrent use.
type Git struct {
	mirrors    string
	workspaces string
	identity   Identity
	gitPath    string
	baseURL    *url.URL
	log        *slog.Logger
	secrets    SecretScanner

	locks   keyedlock.Locks // one holder per mirror
	drivers driverCache     // each workspace's driverOptions
}

// Errors callers branch on.
var (
	// ErrNonFastForward: the remote branch has commits the push does not contain.
	ErrNonFastForward = errors.New("push rejected: not a fast-forward")
	// ErrLeaseRejected: a force-with-lease push found the remote branch not at the expected commit.
	ErrLeaseRejected = errors.New("push rejected: remote branch is not where it was expected")
	// ErrBranchNotAllowed: the branch may not be force-pushed by selfcode.
	ErrBranchNotAllowed = errors.New("branch not allowed")
	// ErrInvalidName: a repository, branch, ref, path or workspace name is unsafe or malformed.
	ErrInvalidName = errors.New("invalid name")
	// ErrNotFound: the ref or file does not exist.
	ErrNotFound = errors.New("not found")
	// ErrRemoteRejected: the remote refused the push (e.g. branch protection).
	ErrRemoteRejected = errors.New("push rejected by remote")
)

// SelfcodeBranchPrefix is the prefix of every branch selfcode creates and may force-push.
const SelfcodeBranchPrefix = "selfcode/"

// New checks the options, creates the directories and finds git.
func New(opts Options) (*Git, error) {
	if opts.Dir == "" {
		return nil, errors.New("gitops: Dir is required")
	}
	if opts.Identity.Name == "" || opts.Identity.Email == "" {
		return nil, errors.New("gitops: Identity name and email are required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("gitops: resolve dir: %w", err)
	}
	gitPath := opts.GitPath
	if gitPath == "" {
		gitPath = "git"
	}
	if gitPath, err = exec.LookPath(gitPath); err != nil {
		return nil, fmt.Errorf("gitops: find git: %w", err)
	}
	base := opts.BaseURL
	if base == "" {
		base = "https://github.com/"
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	bu, err := parseRemote(base)
	if err != nil {
		return nil, fmt.Errorf("gitops: BaseURL: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	secrets := opts.Secrets
	if secrets == nil {
		sc, err := secretscan.New()
		if err != nil {
			return nil, fmt.Errorf("gitops: %w", err)
		}
		secrets = sc
	}
	g := &Git{
		secrets:    secrets,
		mirrors:    filepath.Join(dir, "mirrors"),
		workspaces: filepath.Join(dir, "workspaces"),
		identity:   opts.Identity,
		gitPath:    gitPath,
		baseURL:    bu,
		log:        logger,
	}
	for _, d := range []string{g.mirrors, g.workspaces} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("gitops: create %s: %w", d, err)
		}
	}
	return g, nil
}

var (
	ownerRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
	repoNameRE  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	workspaceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	shaRE       = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
)

// ValidateRepo checks that owner and name are safe to use as path parts.
func ValidateRepo(owner, name string) error {
	if !ownerRE.MatchString(owner) || strings.Contains(owner, "..") {
		return fmt.Errorf("repository owner %q: %w", owner, ErrInvalidName)
	}
	if !repoNameRE.MatchString(name) || strings.Contains(name, "..") || name == "." {
		return fmt.Errorf("repository name %q: %w", name, ErrInvalidName)
	}
	return nil
}

// ParseFullName splits "owner/name" and validates both parts.
func ParseFullName(full string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(full, "/")
	if !ok {
		return "", "", fmt.Errorf("repository %q: want owner/name: %w", full, ErrInvalidName)
	}
	if err := ValidateRepo(owner, name); err != nil {
		return "", "", err
	}
	return owner, name, nil
}

// validRev rejects revisions git could read as an option or that carry
// whitespace or control characters. Git itself resolves what remains.
func validRev(rev string) error {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, " \t\r\n\x00:") || strings.Contains(rev, "..") {
		return fmt.Errorf("revision %q: %w", rev, ErrInvalidName)
	}
	return nil
}

// validBranch applies git's branch name rules without running git.
func validBranch(b string) error {
	bad := b == "" || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".") || strings.HasSuffix(b, ".lock") || strings.Contains(b, "..") ||
		strings.Contains(b, "//") || strings.Contains(b, "@{") || b == "@" || strings.HasPrefix(b, "refs/")
	for _, r := range b {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			bad = true
		}
	}
	for _, part := range strings.Split(b, "/") {
		if strings.HasPrefix(part, ".") {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("branch %q: %w", b, ErrInvalidName)
	}
	return nil
}

func parseRemote(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse remote url: %w", err)
	}
	if u.User != nil {
		return nil, errors.New("remote url must not carry credentials")
	}
	switch u.Scheme {
	case "https", "http", "file":
	default:
		return nil, fmt.Errorf("remote url scheme %q not supported", u.Scheme)
	}
	return u, nil
}

// remoteURL is the credential-free URL of repo.
func (g *Git) remoteURL(repo job.Repo) (*url.URL, error) {
	if err := ValidateRepo(repo.Owner, repo.Name); err != nil {
		return nil, err
	}
	if repo.CloneURL != "" {
		return parseRemote(repo.CloneURL)
	}
	return g.baseURL.Parse(url.PathEscape(repo.Owner) + "/" + url.PathEscape(repo.Name) + ".git")
}

func repoKey(repo job.Repo) string {
	return strings.ToLower(repo.Owner) + "/" + strings.ToLower(repo.Name)
}

// MirrorPath is where repo's mirror lives (it may not exist yet).
func (g *Git) MirrorPath(repo job.Repo) (string, error) {
	if err := ValidateRepo(repo.Owner, repo.Name); err != nil {
		return "", err
	}
	return filepath.Join(g.mirrors, strings.ToLower(repo.Owner), strings.ToLower(repo.Name)+".git"), nil
}

// lock serialises work on one repository's mirror; it waits until the lock is
// free or ctx ends.
func (g *Git) lock(ctx context.Context, key string) (func(), error) {
	return g.locks.Lock(ctx, key)
}

// Sync creates repo's mirror on first use (git clone --mirror) and refreshes
// it afterwards (git fetch --prune). It returns the mirror's path.
func (g *Git) Sync(ctx context.Context, repo job.Repo, token TokenSource) (string, error) {
	unlock, err := g.lock(ctx, repoKey(repo))
	if err != nil {
		return "", err
	}
	defer unlock()
	return g.syncLocked(ctx, repo, token)
}

func (g *Git) syncLocked(ctx context.Context, repo job.Repo, token TokenSource) (string, error) {
	path, err := g.MirrorPath(repo)
	if err != nil {
		return "", err
	}
	remote, err := g.remoteURL(repo)
	if err != nil {
		return "", err
	}
	full := repo.FullName()
	if _, err := os.Stat(filepath.Join(path, "HEAD")); err == nil {
		if _, err := g.run(ctx, call{dir: path, repo: full, args: []string{"config", "remote.origin.url", remote.String()}}); err != nil {
			return "", fmt.Errorf("set mirror remote of %s: %w", full, err)
		}
		if _, err := g.run(ctx, call{dir: path, repo: full, token: token, remote: remote,
			args: []string{"fetch", "--prune", "--quiet", "origin"}}); err != nil {
			return "", fmt.Errorf("refresh mirror of %s: %w", full, err)
		}
		g.log.InfoContext(ctx, "mirror refreshed", "repo", full)
		return path, nil
	}
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("create mirror dir: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".clone-")
	if err != nil {
		return "", fmt.Errorf("create mirror temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := g.run(ctx, call{dir: tmp, noRepo: true, repo: full, token: token, remote: remote,
		args: []string{"clone", "--mirror", "--quiet", "--", remote.String(), "repo.git"}}); err != nil {
		return "", fmt.Errorf("mirror %s: %w", full, err)
	}
	// A leftover directory without HEAD is a broken earlier attempt.
	if err := os.RemoveAll(path); err != nil {
		return "", fmt.Errorf("clear broken mirror: %w", err)
	}
	if err := os.Rename(filepath.Join(tmp, "repo.git"), path); err != nil {
		return "", fmt.Errorf("move mirror into place: %w", err)
	}
	g.log.InfoContext(ctx, "mirror created", "repo", full)
	return path, nil
}

// RemoteBranchSHA returns the commit the remote's branch points at, or "" if
// the branch does not exist (git ls-remote; no mirror needed).
func (g *Git) RemoteBranchSHA(ctx context.Context, repo job.Repo, branch string, token TokenSource) (string, error) {
	if err := validBranch(branch); err != nil {
		return "", err
	}
	remote, err := g.remoteURL(repo)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "selfcode-ls-remote-")
	if err != nil {
		return "", fmt.Errorf("create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	ref := "refs/heads/" + branch
	res, err := g.run(ctx, call{dir: tmp, noRepo: true, repo: repo.FullName(), token: token, remote: remote,
		args: []string{"ls-remote", remote.String(), ref}})
	if err != nil {
		return "", fmt.Errorf("ls-remote %s %s: %w", repo.FullName(), branch, err)
	}
	for _, line := range strings.Split(string(res.stdout), "\n") {
		sha, name, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && name == ref {
			return sha, nil
		}
	}
	return "", nil
}
