package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// tokenEnv is the environment variable that carries the token to the
// credential helper. It is set only on the git child that needs it.
const tokenEnv = "SELFCODE_GIT_TOKEN"

// hostEnv tells the credential helper which host the token is for; it answers
// nothing for any other host.
const hostEnv = "SELFCODE_GIT_HOST"

// credentialHelper is written to a private temporary directory for each
// authenticated git call. It contains no secret: it prints the token from the
// environment of the git process that runs it, and only for the expected host.
const credentialHelper = `#!/bin/sh
# selfcode git credential helper; holds no secret itself.
[ "$1" = get ] || exit 0
host=
while IFS= read -r line; do
	case "$line" in
	host=*) host=${line#host=} ;;
	"") break ;;
	esac
done
[ -n "$host" ] && [ "$host" = "$` + hostEnv + `" ] || exit 0
printf 'username=x-access-token\npassword=%s\n' "$` + tokenEnv + `"
`

// hardening is passed to every git call: no hooks, no fsmonitor, no other
// credential helper, no submodule recursion, no background maintenance
// that could outlive a lock. Together with baseEnv (no system, global or
// environment configuration) it leaves git nothing of a repository's to
// run: the only configuration it reads is what selfcode wrote, so no
// filter, diff, textconv or merge driver that a .gitattributes names is
// defined (see docs/security.md).
var hardening = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "credential.helper=",
	"-c", "protocol.ext.allow=never",
	"-c", "submodule.recurse=false",
	"-c", "gc.autoDetach=false",
	"-c", "maintenance.autoDetach=false",
	"-c", "commit.gpgSign=false",
	"-c", "advice.detachedHead=false",
}

// call describes one git invocation.
type call struct {
	dir    string // working directory
	noRepo bool   // dir is not a repository: stop git discovering one above it
	// gitDir is the repository of a call that may run the drivers its
	// .gitattributes name (a workspace's): their definitions in the
	// repository's own configuration are overridden (driverOptions).
	gitDir string
	args   []string // git arguments after the hardening options
	env    []string // extra environment
	stdin  []byte
	repo   string      // owner/name for logs
	token  TokenSource // nil: no credentials
	remote *url.URL    // the remote the token is for
}

// gitError is a failed git command; its message carries git's stderr.
type gitError struct {
	args   []string
	code   int
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(e.args, " "), e.code, msg)
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode returns git's exit status from err, or -1.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// result is what a git call printed.
type result struct {
	stdout []byte
	stderr []byte
}

// run executes git. Any occurrence of the token in captured output is
// redacted before it is returned or logged.
func (g *Git) run(ctx context.Context, c call) (result, error) {
	args := append([]string(nil), hardening...)
	env := baseEnv()
	secret := ""
	if c.token != nil {
		if c.remote == nil {
			return result{}, errors.New("git: token given without a remote")
		}
		if err := checkCredentialTransport(c.remote); err != nil {
			return result{}, err
		}
		tok, err := c.token(ctx)
		if err != nil {
			return result{}, fmt.Errorf("get token for git: %w", err)
		}
		if strings.ContainsAny(tok, "\r\n\x00") {
			return result{}, errors.New("get token for git: token contains control characters")
		}
		if tok != "" {
			dir, err := os.MkdirTemp("", "selfcode-git-cred-")
			if err != nil {
				return result{}, fmt.Errorf("create credential helper dir: %w", err)
			}
			defer os.RemoveAll(dir)
			if err := os.Chmod(dir, 0o700); err != nil {
				return result{}, fmt.Errorf("protect credential helper dir: %w", err)
			}
			helper := filepath.Join(dir, "credential-helper")
			if err := os.WriteFile(helper, []byte(credentialHelper), 0o700); err != nil {
				return result{}, fmt.Errorf("write credential helper: %w", err)
			}
			args = append(args, "-c", "credential.helper="+helper)
			env = append(env, tokenEnv+"="+tok, hostEnv+"="+c.remote.Host)
			secret = tok
		}
	}
	if c.gitDir != "" {
		opts, err := g.drivers.options(ctx, g.gitPath, c.gitDir)
		if err != nil {
			return result{}, err
		}
		args = append(args, opts...)
	}
	args = append(args, c.args...)
	env = append(env, c.env...)
	if c.noRepo {
		env = append(env, "GIT_CEILING_DIRECTORIES="+filepath.Dir(filepath.Clean(c.dir)))
	}

	cmd := exec.CommandContext(ctx, g.gitPath, args...)
	cmd.Dir = c.dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: redact(stdout.Bytes(), secret), stderr: redact(stderr.Bytes(), secret)}
	g.log.DebugContext(ctx, "git", "repo", c.repo, "args", c.args, "duration", time.Since(start), "err", err != nil)
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("git %s: %w", firstArg(c.args), ctx.Err())
		}
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return res, &gitError{args: c.args, code: code, stderr: string(res.stderr), err: err}
	}
	return res, nil
}

// driverOptions are -c options that leave every filter and merge driver
// the configuration of gitDir defines (its own file, and whatever it
// includes) without a command. hardening cannot name them in advance,
// since a driver's name is anything; selfcode writes no driver, so any
// there was planted, and a .gitattributes naming it must find nothing to
// run. (Diff drivers and diff.external never run: every diff selfcode
// makes passes --no-ext-diff --no-textconv, and git log and commit make
// none.) A name git's -c syntax cannot carry (it holds "=") refuses the
// call. Git's calls take them from its driverCache.
func driverOptions(ctx context.Context, gitPath, gitDir string) ([]string, error) {
	opts, _, err := readDrivers(ctx, gitPath, gitDir)
	return opts, err
}

// readDrivers reads gitDir's configuration for driverOptions, and says
// which files it came from or could have: every file git read, and every
// file an include names (read or not: missing, or its condition false).
func readDrivers(ctx context.Context, gitPath, gitDir string) (opts, files []string, err error) {
	cmd := exec.CommandContext(ctx, gitPath, append(append([]string(nil), hardening...),
		"--git-dir="+gitDir, "config", "--list", "--show-origin", "-z")...)
	cmd.Env = baseEnv()
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("read the git configuration of %s: %w: %s", filepath.Base(gitDir), err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]bool{}
	fields := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		origin, entry := fields[i], fields[i+1]
		name, value, _ := strings.Cut(entry, "\n")
		from, isFile := strings.CutPrefix(origin, "file:")
		if isFile {
			from = absPath(from)
			files = append(files, from)
			if p, ok := includePath(name, value, from); ok {
				files = append(files, p)
			}
		}
		section, rest, ok := strings.Cut(name, ".")
		dot := strings.LastIndexByte(rest, '.')
		if !ok || dot < 0 || (section != "filter" && section != "merge") {
			continue
		}
		driver := rest[:dot]
		if seen[section+"."+driver] {
			continue
		}
		seen[section+"."+driver] = true
		if strings.ContainsAny(driver, "=\n") {
			return nil, nil, fmt.Errorf("%w: the git configuration of %s defines a %s driver named %q", ErrUnsafeConfig, filepath.Base(gitDir), section, driver)
		}
		if section == "merge" {
			opts = append(opts, "-c", "merge."+driver+".driver=false")
			continue
		}
		for _, k := range []string{"clean=", "smudge=", "process=", "required=false"} {
			opts = append(opts, "-c", "filter."+driver+"."+k)
		}
	}
	return opts, files, nil
}

// includePath is the file an include.path or includeIf.<condition>.path
// entry of the file from names, as git finds it: "~/" from HOME, a
// relative path from from's folder.
func includePath(name, value, from string) (string, bool) {
	section, rest, _ := strings.Cut(name, ".")
	if (section != "include" && section != "includeif") || !strings.HasSuffix(rest, "path") || value == "" {
		return "", false
	}
	if rest != "path" && !strings.HasSuffix(rest, ".path") {
		return "", false
	}
	if home, ok := strings.CutPrefix(value, "~/"); ok {
		return filepath.Join(os.Getenv("HOME"), home), true
	}
	if !filepath.IsAbs(value) {
		value = filepath.Join(filepath.Dir(from), value)
	}
	return filepath.Clean(value), true
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// ErrUnsafeConfig: a repository's git configuration holds something
// selfcode cannot neutralise, so no git command runs on it.
var ErrUnsafeConfig = errors.New("unsafe git configuration")

// Command is a git command hardened as this package's own calls are (no
// hooks, no fsmonitor, no credential helper, no system or user git
// config, no prompt), run in dir; for code outside this package that reads
// a local repository (selfcode eval).
func Command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(append([]string(nil), hardening...), args...)...)
	cmd.Dir = dir
	cmd.Env = baseEnv()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func redact(b []byte, secret string) []byte {
	if secret == "" || !bytes.Contains(b, []byte(secret)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(secret), []byte("[REDACTED]"))
}

// Local runs git with the same hardening and environment as every other
// selfcode git call, on a repository of this machine (`selfcode run`'s
// checkout): its hooks, fsmonitor and the host's git configuration are
// ignored. env adds variables (GIT_AUTHOR_NAME…). It returns stdout.
func Local(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("find git: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, append(append([]string(nil), hardening...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", firstArg(args), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// passEnv are the only variables of the server's environment a git call
// gets: where programs and the home and temporary folders are, the time
// zone of commit dates, and how to reach the remote (proxies, CA
// certificates). Everything else — the model key, the webhook secret, the
// App's private key, whatever else the operator's environment holds — stays
// in the server process: git and everything it starts (the credential
// helper, remote helpers) never see it.
var passEnv = []string{
	"PATH", "HOME", "TMPDIR", "TZ",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
}

// baseEnv is the environment of every git call: passEnv from this
// process's, plus settings that make git non-interactive, in the C locale
// and independent of the host's git configuration. What a call adds
// (identity, index file, the credential helper's token) comes on top.
func baseEnv() []string {
	env := make([]string, 0, len(passEnv)+5)
	for _, k := range passEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env,
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_ASKPASS=",
	)
}

// checkCredentialTransport refuses to hand a token to git for a remote it
// would travel to in clear text, unless that remote is on this machine.
func checkCredentialTransport(u *url.URL) error {
	switch u.Scheme {
	case "https", "file":
		return nil
	case "http":
		host := u.Hostname()
		if host == "localhost" {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("refusing to send credentials over plain http to %s", u.Host)
	}
	return fmt.Errorf("unsupported remote scheme %q", u.Scheme)
}
