package gitops

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/selfcode/selfcode/app/job"
)

// testToken is the installation token the fake remote accepts. It is
// distinctive so that grepping for it cannot match by accident.
const testToken = "ghs_T0kenThatMustNeverLeak9f3a7c"

// fakeRemote is a minimal smart-HTTP git server: git http-backend behind
// net/http/cgi, requiring Basic auth x-access-token:<token>.
type fakeRemote struct {
	root    string // GIT_PROJECT_ROOT: <root>/<owner>/<name>.git
	srv     *httptest.Server
	authOK  atomic.Int64
	authBad atomic.Int64
	probes  atomic.Int64
}

func requireGit(t *testing.T) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	return git
}

func newFakeRemote(t *testing.T) *fakeRemote {
	t.Helper()
	git := requireGit(t)
	out, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git-http-backend not found: %v", err)
	}
	r := &fakeRemote{root: t.TempDir()}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, ok := req.BasicAuth()
		if !ok {
			r.probes.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
			http.Error(w, "auth required", http.StatusUnauthorized)
			return
		}
		if user != "x-access-token" || pass != testToken {
			r.authBad.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		r.authOK.Add(1)
		h := &cgi.Handler{
			Path: backend,
			Env: []string{
				"GIT_PROJECT_ROOT=" + r.root,
				"GIT_HTTP_EXPORT_ALL=1",
				"REMOTE_USER=" + user,
				"GIT_CONFIG_NOSYSTEM=1",
				"GIT_CONFIG_GLOBAL=" + os.DevNull,
			},
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// repo returns the job.Repo for owner/name on this remote.
func (r *fakeRemote) repo(owner, name string) job.Repo {
	return job.Repo{Owner: owner, Name: name, CloneURL: r.srv.URL + "/" + owner + "/" + name + ".git"}
}

// barePath is the server-side repository of owner/name.
func (r *fakeRemote) barePath(owner, name string) string {
	return filepath.Join(r.root, owner, name+".git")
}

// create makes owner/name on the server with one commit on main, pushed from
// a human clone (over the file system, not HTTP) that the test can keep using.
func (r *fakeRemote) create(t *testing.T, owner, name string) *human {
	t.Helper()
	bare := r.barePath(owner, name)
	runGit(t, "", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	h := &human{t: t, dir: t.TempDir()}
	runGit(t, h.dir, "init", "--quiet", "--initial-branch=main")
	runGit(t, h.dir, "remote", "add", "origin", bare)
	h.write("README.md", "# "+name+"\n")
	h.write("main.go", "package main\n\nfunc main() {}\n")
	h.commit("initial commit")
	h.push("main")
	return h
}

// human is a person's clone of a repository on the fake remote.
type human struct {
	t   *testing.T
	dir string
}

func (h *human) write(path, content string) {
	h.t.Helper()
	full := filepath.Join(h.dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *human) commit(msg string) string {
	h.t.Helper()
	runGit(h.t, h.dir, "add", "--all")
	runGit(h.t, h.dir, "commit", "--quiet", "-m", msg)
	return strings.TrimSpace(runGit(h.t, h.dir, "rev-parse", "HEAD"))
}

func (h *human) push(refspec string) {
	h.t.Helper()
	runGit(h.t, h.dir, "push", "--quiet", "--force", "origin", refspec)
}

// runGit runs the real git for test setup, isolated from the host's config.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Human", "GIT_AUTHOR_EMAIL=human@example.com",
		"GIT_COMMITTER_NAME=Human", "GIT_COMMITTER_EMAIL=human@example.com",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// bareSHA is what ref points at on the server, "" if missing.
func (r *fakeRemote) bareSHA(t *testing.T, owner, name, ref string) string {
	t.Helper()
	cmd := exec.Command("git", "--git-dir="+r.barePath(owner, name), "rev-parse", "--verify", "--quiet", ref)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

var botID = Identity{Name: "selfcode-test[bot]", Email: "42+selfcode-test[bot]@users.noreply.github.com"}

// harness is a Git under test whose git calls are recorded and whose logs
// are captured.
type harness struct {
	g       *Git
	logs    *bytes.Buffer
	argvLog string
	// envLog holds the environment of every git call, each followed by
	// "--- end".
	envLog string
	dir    string
}

// newHarness wraps git in a script that appends every argv it is given to a
// file, and captures all slog output at debug level.
func newHarness(t *testing.T) *harness {
	t.Helper()
	git := requireGit(t)
	tools := t.TempDir()
	argvLog, envLog := filepath.Join(tools, "argv.log"), filepath.Join(tools, "env.log")
	wrapper := recordingGit(t, tools, git, argvLog, envLog)
	logs := &bytes.Buffer{}
	dir := t.TempDir()
	g, err := New(Options{
		Dir:      dir,
		Identity: botID,
		GitPath:  wrapper,
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{g: g, logs: logs, argvLog: argvLog, envLog: envLog, dir: dir}
}

// recordingGit writes dir/git, a script that appends its argv to argvLog
// and its environment to envLog, then runs git.
func recordingGit(t *testing.T, dir, git, argvLog, envLog string) string {
	t.Helper()
	wrapper := filepath.Join(dir, "git")
	script := "#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%s\\n' \"$a\" >> '" + argvLog + "'; done\nprintf -- '--- end\\n' >> '" + argvLog + "'\n" +
		"env >> '" + envLog + "'\nprintf -- '--- end\\n' >> '" + envLog + "'\nexec '" + git + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}
