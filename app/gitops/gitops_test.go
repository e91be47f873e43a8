package gitops

import (
	"context"
	"net/url"
	"os/exec"

	"errors"
	"github.com/selfcode/selfcode/app/job"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSyncCreatesThenRefreshesMirror(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	repo := remote.repo("acme", "widgets")
	human.write("gone.txt", "x\n")
	human.commit("branch to delete")
	human.push("HEAD:refs/heads/old-branch")
	runGit(t, human.dir, "reset", "--quiet", "--hard", "HEAD~1")

	path, err := h.g.Sync(t.Context(), repo, StaticToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(h.dir, "mirrors", "acme", "widgets.git"); path != want {
		t.Fatalf("mirror path = %s, want %s", path, want)
	}
	first := gitIn(t, path, "rev-parse", "refs/heads/main")
	if first != remote.bareSHA(t, "acme", "widgets", "refs/heads/main") {
		t.Fatalf("mirror main = %s, want upstream main", first)
	}
	if gitIn(t, path, "rev-parse", "--verify", "--quiet", "refs/heads/old-branch") == "" {
		t.Fatal("mirror lacks old-branch")
	}

	human.write("feature.txt", "new upstream work\n")
	second := human.commit("upstream moves on")
	human.push("main")
	runGit(t, human.dir, "push", "--quiet", "origin", "--delete", "old-branch")

	if _, err := h.g.Sync(t.Context(), repo, StaticToken(testToken)); err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, path, "rev-parse", "refs/heads/main"); got != second {
		t.Fatalf("after refresh main = %s, want %s", got, second)
	}
	if got := gitIn(t, path, "rev-parse", "--verify", "--quiet", "refs/heads/old-branch"); got != "" {
		t.Fatalf("deleted upstream branch not pruned: %s", got)
	}
	if url := gitIn(t, path, "config", "remote.origin.url"); url != repo.CloneURL {
		t.Fatalf("mirror remote url = %q, want %q", url, repo.CloneURL)
	}
	if remote.probes.Load() == 0 || remote.authOK.Load() == 0 {
		t.Fatalf("expected unauthenticated probes and authenticated requests, got probes=%d ok=%d",
			remote.probes.Load(), remote.authOK.Load())
	}
}

func TestSyncSameRepositoryConcurrently(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	remote.create(t, "acme", "widgets")
	repo := remote.repo("acme", "widgets")
	// Different casing must share the mirror and its lock.
	upper := repo
	upper.Owner, upper.Name = "ACME", "Widgets"

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		r := repo
		if i%2 == 1 {
			r = upper
		}
		wg.Go(func() {
			_, err := h.g.Sync(t.Context(), r, StaticToken(testToken))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent sync: %v", err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(h.dir, "mirrors", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "widgets.git" {
		t.Fatalf("mirrors/acme holds %v, want only widgets.git", entries)
	}
}

func TestWorkspaceCommitAndSelfcodePush(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	repo := remote.repo("acme", "widgets")
	tok := StaticToken(testToken)
	mainSHA := remote.bareSHA(t, "acme", "widgets", "refs/heads/main")

	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: repo, ID: "job1", Branch: "selfcode/issue-7", Base: "main", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	if ws.BaseSHA != mainSHA {
		t.Fatalf("BaseSHA = %s, want %s", ws.BaseSHA, mainSHA)
	}
	if got := gitIn(t, ws.Dir, "--git-dir="+ws.GitDir, "symbolic-ref", "HEAD"); got != "refs/heads/selfcode/issue-7" {
		t.Fatalf("HEAD = %s", got)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, ".git")); !os.IsNotExist(err) {
		t.Fatalf("checkout must not contain .git: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws.Dir, "main.go")); err != nil || !strings.Contains(string(b), "func main") {
		t.Fatalf("checkout missing main.go: %v", err)
	}

	// Nothing changed yet: Commit is a no-op.
	sha, changed, err := h.g.Commit(t.Context(), ws, "nothing")
	if err != nil || changed || sha != mainSHA {
		t.Fatalf("Commit without changes = %s, %v, %v", sha, changed, err)
	}

	writeFile(t, filepath.Join(ws.Dir, "hello.go"), "package main\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n")
	sha, changed, err = h.g.Commit(t.Context(), ws, "Add Hello\n\nCloses #7\n")
	if err != nil || !changed {
		t.Fatalf("Commit = %s, %v, %v", sha, changed, err)
	}
	who := gitIn(t, ws.Dir, "--git-dir="+ws.GitDir, "log", "-1", "--format=%an|%ae|%cn|%ce|%B")
	want := botID.Name + "|" + botID.Email + "|" + botID.Name + "|" + botID.Email + "|Add Hello\n\nCloses #7"
	if who != want {
		t.Fatalf("commit identity/message = %q, want %q", who, want)
	}
	if head, _ := h.g.HeadSHA(t.Context(), ws); head != sha {
		t.Fatalf("HeadSHA = %s, want %s", head, sha)
	}

	// First push: the branch must not exist yet.
	if err := h.g.PushSelfcodeBranch(t.Context(), ws, "selfcode/issue-7", "", tok); err != nil {
		t.Fatal(err)
	}
	if got := remote.bareSHA(t, "acme", "widgets", "refs/heads/selfcode/issue-7"); got != sha {
		t.Fatalf("remote branch = %s, want %s", got, sha)
	}
	if got, err := h.g.RemoteBranchSHA(t.Context(), repo, "selfcode/issue-7", tok); err != nil || got != sha {
		t.Fatalf("RemoteBranchSHA = %s, %v", got, err)
	}
	if got, err := h.g.RemoteBranchSHA(t.Context(), repo, "selfcode/nope", tok); err != nil || got != "" {
		t.Fatalf("RemoteBranchSHA(missing) = %q, %v", got, err)
	}

	// Pushing the same commit again is a no-op success (a retry after a crash).
	if err := h.g.PushSelfcodeBranch(t.Context(), ws, "selfcode/issue-7", "", tok); err != nil {
		t.Fatalf("re-push of the same commit: %v", err)
	}
	// A new commit under a "must not exist" lease fails: the branch exists.
	writeFile(t, filepath.Join(ws.Dir, "extra.txt"), "extra\n")
	if _, _, err := h.g.Commit(t.Context(), ws, "Extra"); err != nil {
		t.Fatal(err)
	}
	err = h.g.PushSelfcodeBranch(t.Context(), ws, "selfcode/issue-7", "", tok)
	if !errors.Is(err, ErrLeaseRejected) {
		t.Fatalf("push with empty lease onto existing branch: %v, want ErrLeaseRejected", err)
	}

	// Someone else moves the branch; a rewritten commit pushed with the old lease is refused.
	runGit(t, human.dir, "fetch", "--quiet", "origin", "selfcode/issue-7")
	runGit(t, human.dir, "checkout", "--quiet", "-b", "hijack", "FETCH_HEAD")
	human.write("other.txt", "someone else\n")
	moved := human.commit("someone else's commit")
	human.push("hijack:selfcode/issue-7")

	writeFile(t, filepath.Join(ws.Dir, "hello.go"), "package main\n\nfunc Hello() string { return \"hello\" }\n")
	second, _, err := h.g.Commit(t.Context(), ws, "Rework Hello")
	if err != nil {
		t.Fatal(err)
	}
	err = h.g.PushSelfcodeBranch(t.Context(), ws, "selfcode/issue-7", sha, tok)
	if !errors.Is(err, ErrLeaseRejected) {
		t.Fatalf("push with stale lease: %v, want ErrLeaseRejected", err)
	}
	if got := remote.bareSHA(t, "acme", "widgets", "refs/heads/selfcode/issue-7"); got != moved {
		t.Fatalf("remote branch changed by refused push: %s", got)
	}

	// With the right lease it force-pushes (the branch is selfcode's own).
	if err := h.g.PushSelfcodeBranch(t.Context(), ws, "selfcode/issue-7", moved, tok); err != nil {
		t.Fatal(err)
	}
	if got := remote.bareSHA(t, "acme", "widgets", "refs/heads/selfcode/issue-7"); got != second {
		t.Fatalf("remote branch = %s, want %s", got, second)
	}

	// A branch without the selfcode/ prefix is never force-pushed.
	before := remote.bareSHA(t, "acme", "widgets", "refs/heads/main")
	err = h.g.PushSelfcodeBranch(t.Context(), ws, "main", before, tok)
	if !errors.Is(err, ErrBranchNotAllowed) {
		t.Fatalf("push to main: %v, want ErrBranchNotAllowed", err)
	}
	if got := remote.bareSHA(t, "acme", "widgets", "refs/heads/main"); got != before {
		t.Fatal("main moved")
	}

	root := filepath.Dir(ws.Dir)
	if err := ws.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("workspace still on disk: %v", err)
	}
}

func TestPushFastForwardToHumanBranch(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	repo := remote.repo("acme", "widgets")
	tok := StaticToken(testToken)
	runGit(t, human.dir, "checkout", "--quiet", "-b", "feature")
	human.write("feature.txt", "human work\n")
	human.commit("human feature")
	human.push("feature")

	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: repo, ID: "pr-3", Branch: "feature", Base: "feature", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.Dir, "feature.txt"), "human work\nplus selfcode\n")
	sha, _, err := h.g.Commit(t.Context(), ws, "Extend feature")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.PushFastForward(t.Context(), ws, "feature", tok); err != nil {
		t.Fatal(err)
	}
	if got := remote.bareSHA(t, "acme", "widgets", "refs/heads/feature"); got != sha {
		t.Fatalf("feature = %s, want %s", got, sha)
	}

	// The human pushes again; selfcode's next commit is no longer a fast-forward.
	runGit(t, human.dir, "pull", "--quiet", "--ff-only", "origin", "feature")
	human.write("more.txt", "more human work\n")
	humanHead := human.commit("more human work")
	human.push("feature")

	writeFile(t, filepath.Join(ws.Dir, "selfcode.txt"), "x\n")
	if _, _, err := h.g.Commit(t.Context(), ws, "Another change"); err != nil {
		t.Fatal(err)
	}
	err = h.g.PushFastForward(t.Context(), ws, "feature", tok)
	if !errors.Is(err, ErrNonFastForward) {
		t.Fatalf("push over moved branch: %v, want ErrNonFastForward", err)
	}
	if got := remote.bareSHA(t, "acme", "widgets", "refs/heads/feature"); got != humanHead {
		t.Fatalf("human branch overwritten: %s, want %s", got, humanHead)
	}

	// Rebuilding on the new head: a fresh workspace sees the human's commit.
	ws2, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: repo, ID: "pr-3", Branch: "feature", Base: "feature", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	if ws2.BaseSHA != humanHead {
		t.Fatalf("rebuilt workspace base = %s, want %s", ws2.BaseSHA, humanHead)
	}
}

func TestDiffChangedFilesResetAndReadFile(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	human.write(".gitignore", "build/\n")
	human.write("logo.bin", "\x00\x01\x02")
	human.write(".selfcode.yml", "verify: []\n")
	human.commit("more files")
	human.push("main")
	repo := remote.repo("acme", "widgets")

	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: repo, ID: "diff", Branch: "selfcode/issue-1", Base: "main", Token: StaticToken(testToken)})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.Dir, "README.md"), "# widgets\n\nNow documented.\n")
	writeFile(t, filepath.Join(ws.Dir, "pkg", "new.go"), "package pkg\n")
	writeFile(t, filepath.Join(ws.Dir, "logo.bin"), "\x00\x03")
	writeFile(t, filepath.Join(ws.Dir, "build", "out.o"), "ignored")
	if err := os.Remove(filepath.Join(ws.Dir, "main.go")); err != nil {
		t.Fatal(err)
	}

	diff, err := h.g.Diff(t.Context(), ws, ws.BaseSHA)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+Now documented.", "diff --git a/pkg/new.go b/pkg/new.go", "new file mode", "deleted file mode", "-func main() {}"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "build/out.o") {
		t.Error("diff includes an ignored file")
	}

	files, err := h.g.ChangedFiles(t.Context(), ws, "main")
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "README.md", Status: "modified", Added: 2, Deleted: 0},
		{Path: "logo.bin", Status: "modified", Binary: true},
		{Path: "main.go", Status: "deleted", Deleted: 3},
		{Path: "pkg/new.go", Status: "added", Added: 1},
	}
	if len(files) != len(want) {
		t.Fatalf("ChangedFiles = %+v, want %+v", files, want)
	}
	for i := range want {
		if files[i] != want[i] {
			t.Errorf("file %d = %+v, want %+v", i, files[i], want[i])
		}
	}
	// Diff and ChangedFiles do not stage anything in the real index.
	if staged := gitIn(t, ws.Dir, "--git-dir="+ws.GitDir, "--work-tree="+ws.Dir, "diff", "--cached", "--name-only"); staged != "" {
		t.Fatalf("real index was modified: %q", staged)
	}

	cfg, err := h.g.ReadFileAt(t.Context(), ws, "main", ".selfcode.yml")
	if err != nil || string(cfg) != "verify: []\n" {
		t.Fatalf("ReadFileAt = %q, %v", cfg, err)
	}
	if _, err := h.g.ReadFileAt(t.Context(), ws, "main", "missing.yml"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadFileAt(missing) = %v, want ErrNotFound", err)
	}
	if _, err := h.g.ReadFileAt(t.Context(), ws, "main", "../etc/passwd"); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("ReadFileAt(../) = %v, want ErrInvalidName", err)
	}

	if err := h.g.Reset(t.Context(), ws, "main"); err != nil {
		t.Fatal(err)
	}
	if files, err := h.g.ChangedFiles(t.Context(), ws, "main"); err != nil || len(files) != 0 {
		t.Fatalf("after Reset ChangedFiles = %+v, %v", files, err)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, "build", "out.o")); err != nil {
		t.Fatalf("Reset removed an ignored file: %v", err)
	}
}

func TestWrongTokenFailsWithoutPrompting(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	remote.create(t, "acme", "widgets")
	repo := remote.repo("acme", "widgets")
	for name, tok := range map[string]TokenSource{"wrong token": StaticToken("ghs_wrong"), "no token": nil} {
		t.Run(name, func(t *testing.T) {
			_, err := h.g.Sync(t.Context(), repo, tok)
			if err == nil {
				t.Fatal("sync with bad credentials succeeded")
			}
			if _, statErr := os.Stat(filepath.Join(h.dir, "mirrors", "acme", "widgets.git")); !os.IsNotExist(statErr) {
				t.Fatalf("failed clone left a mirror behind: %v", statErr)
			}
		})
	}
	failing := TokenSource(func(ctx context.Context) (string, error) { return "", errors.New("app key revoked") })
	if _, err := h.g.Sync(t.Context(), repo, failing); err == nil || !strings.Contains(err.Error(), "app key revoked") {
		t.Fatalf("token source error not surfaced: %v", err)
	}
}

func TestNamesAndURLsAreValidated(t *testing.T) {
	h := newHarness(t)
	good := job.Repo{Owner: "acme", Name: "widgets"}
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"owner with dotdot", func() error { return ValidateRepo("..", "x") }, ErrInvalidName},
		{"name with slash", func() error { return ValidateRepo("acme", "a/b") }, ErrInvalidName},
		{"name dotdot", func() error { return ValidateRepo("acme", "..") }, ErrInvalidName},
		{"name dot", func() error { return ValidateRepo("acme", ".") }, ErrInvalidName},
		{"empty owner", func() error { return ValidateRepo("", "x") }, ErrInvalidName},
		{"dot-github is fine", func() error { return ValidateRepo("acme", ".github") }, nil},
		{"full name extra slash", func() error { _, _, err := ParseFullName("a/b/c"); return err }, ErrInvalidName},
		{"full name ok", func() error { _, _, err := ParseFullName("acme/widgets"); return err }, nil},
		{"branch option", func() error { return validBranch("-f") }, ErrInvalidName},
		{"branch dotdot", func() error { return validBranch("selfcode/../main") }, ErrInvalidName},
		{"branch space", func() error { return validBranch("a b") }, ErrInvalidName},
		{"branch lock", func() error { return validBranch("x.lock") }, ErrInvalidName},
		{"branch ok", func() error { return validBranch("selfcode/issue-12") }, nil},
		{"rev option", func() error { return validRev("--upload-pack=x") }, ErrInvalidName},
		{"rev range", func() error { return validRev("a..b") }, ErrInvalidName},
		{"rev pull ref", func() error { return validRev("refs/pull/5/head") }, nil},
		{"workspace id traversal", func() error {
			_, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: good, ID: "../x", Branch: "selfcode/a", Base: "main"})
			return err
		}, ErrInvalidName},
		{"credentials in url", func() error {
			_, err := h.g.Sync(t.Context(), job.Repo{Owner: "acme", Name: "w", CloneURL: "https://x-access-token:abc@github.com/acme/w.git"}, nil)
			return err
		}, nil},
		{"lease not a sha", func() error {
			return h.g.PushSelfcodeBranch(t.Context(), &Workspace{}, "selfcode/x", "main", nil)
		}, ErrInvalidName},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			switch {
			case tc.name == "credentials in url":
				if err == nil || !strings.Contains(err.Error(), "credentials") {
					t.Fatalf("got %v, want refusal of credentials in URL", err)
				}
			case tc.want == nil && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCredentialsOnlyOverSafeTransport(t *testing.T) {
	cases := []struct {
		url string
		ok  bool
	}{
		{"https://github.com/a/b.git", true},
		{"http://127.0.0.1:8080/a/b.git", true},
		{"http://[::1]:8080/a/b.git", true},
		{"http://localhost/a/b.git", true},
		{"http://github.example.com/a/b.git", false},
		{"ssh://git@github.com/a/b.git", false},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkCredentialTransport(u); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}

func TestBotIdentity(t *testing.T) {
	if got := BotIdentity("selfcode", 41898282); got != (Identity{"selfcode[bot]", "41898282+selfcode[bot]@users.noreply.github.com"}) {
		t.Fatalf("BotIdentity = %+v", got)
	}
	if got := BotIdentity("selfcode", 0); got.Email != "selfcode[bot]@users.noreply.github.com" {
		t.Fatalf("BotIdentity without id = %+v", got)
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A workspace costs no copy of the history: its object files are the
// mirror's, hard-linked. And it stands on its own: when the mirror drops
// every object (its refs gone, pruned at once), the job still has its base
// and commits on it.
func TestWorkspaceSharesObjectsYetOutlivesMirrorGC(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	remote.create(t, "acme", "widgets")
	repo := remote.repo("acme", "widgets")
	tok := StaticToken(testToken)
	mirror, err := h.g.Sync(t.Context(), repo, tok)
	if err != nil {
		t.Fatal(err)
	}
	runGit(t, mirror, "repack", "-a", "-d", "-q") // one pack to compare
	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: repo, ID: "job1", Branch: "selfcode/issue-7", Base: "main", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(mirror, "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("mirror packs: %v", packs)
	}
	mine, err := os.Stat(filepath.Join(ws.GitDir, "objects", "pack", filepath.Base(packs[0])))
	if err != nil {
		t.Fatalf("workspace lacks the mirror's pack: %v", err)
	}
	theirs, _ := os.Stat(packs[0])
	if !os.SameFile(mine, theirs) {
		t.Fatal("the workspace copied the mirror's pack instead of linking it")
	}
	if _, err := os.Stat(filepath.Join(ws.GitDir, "objects", "info", "alternates")); !os.IsNotExist(err) {
		t.Fatalf("the workspace borrows objects through alternates: %v", err)
	}

	for _, ref := range strings.Fields(gitIn(t, mirror, "for-each-ref", "--format=%(refname)")) {
		runGit(t, mirror, "update-ref", "-d", ref)
	}
	runGit(t, mirror, "-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "gc", "--prune=now", "-q")
	if left, _ := filepath.Glob(filepath.Join(mirror, "objects", "pack", "*.pack")); len(left) != 0 {
		t.Fatalf("the mirror kept %v after gc; the test proves nothing", left)
	}
	if _, err := h.g.ReadFileAt(t.Context(), ws, ws.BaseSHA, "main.go"); err != nil {
		t.Fatalf("the base is gone from the workspace with the mirror's gc: %v", err)
	}
	writeFile(t, filepath.Join(ws.Dir, "hello.go"), "package main\n")
	if _, changed, err := h.g.Commit(t.Context(), ws, "Add hello"); err != nil || !changed {
		t.Fatalf("commit after the mirror's gc: %v %v", changed, err)
	}
}
