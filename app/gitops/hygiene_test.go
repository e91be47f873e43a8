package gitops

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenNeverLeaks runs every remote operation with a recording git
// wrapper, captured logs and a private TMPDIR, then searches everything
// selfcode wrote for the token.
func TestTokenNeverLeaks(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	runGit(t, human.dir, "checkout", "--quiet", "-b", "feature")
	human.write("f.txt", "f\n")
	human.commit("feature")
	human.push("feature")
	repo := remote.repo("acme", "widgets")
	tok := StaticToken(testToken)
	ctx := t.Context()

	mirror, err := h.g.Sync(ctx, repo, tok)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := h.g.NewWorkspace(ctx, WorkspaceOptions{Repo: repo, ID: "hyg", Branch: "selfcode/issue-9", Base: "main", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.Dir, "x.txt"), "x\n")
	if _, _, err := h.g.Commit(ctx, ws, "x"); err != nil {
		t.Fatal(err)
	}
	if err := h.g.PushSelfcodeBranch(ctx, ws, "selfcode/issue-9", "", tok); err != nil {
		t.Fatal(err)
	}
	if _, err := h.g.RemoteBranchSHA(ctx, repo, "selfcode/issue-9", tok); err != nil {
		t.Fatal(err)
	}
	pr, err := h.g.NewWorkspace(ctx, WorkspaceOptions{Repo: repo, ID: "hyg-pr", Branch: "feature", Base: "feature", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(pr.Dir, "y.txt"), "y\n")
	if _, _, err := h.g.Commit(ctx, pr, "y"); err != nil {
		t.Fatal(err)
	}
	if err := h.g.PushFastForward(ctx, pr, "feature", tok); err != nil {
		t.Fatal(err)
	}
	// A failing push too: its error text must not carry the token either.
	writeFile(t, filepath.Join(ws.Dir, "z.txt"), "z\n")
	if _, _, err := h.g.Commit(ctx, ws, "z"); err != nil {
		t.Fatal(err)
	}
	pushErr := h.g.PushSelfcodeBranch(ctx, ws, "selfcode/issue-9", "", tok)
	if pushErr == nil || strings.Contains(pushErr.Error(), testToken) {
		t.Fatalf("failing push error = %v", pushErr)
	}

	secret := []byte(testToken)
	argv, err := os.ReadFile(h.argvLog)
	if err != nil || len(argv) == 0 {
		t.Fatalf("argv log empty: %v", err)
	}
	if bytes.Contains(argv, secret) {
		t.Error("token appears in git's argv")
	}
	if !bytes.Contains(argv, []byte("credential.helper=\n")) {
		t.Error("git calls do not reset credential helpers")
	}
	if bytes.Contains(h.logs.Bytes(), secret) {
		t.Error("token appears in the logs")
	}
	if !bytes.Contains(h.logs.Bytes(), []byte("mirror created")) {
		t.Error("log capture did not work")
	}
	if cfg, err := os.ReadFile(filepath.Join(mirror, "config")); err != nil || bytes.Contains(cfg, secret) || bytes.Contains(cfg, []byte("x-access-token")) {
		t.Errorf("mirror config holds credentials (err %v):\n%s", err, cfg)
	}
	// Everything under the data dir — mirrors, both workspaces with their git
	// dirs — and the temporary directory, where credential helpers lived.
	for _, root := range []string{h.dir, tmp} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if strings.HasPrefix(d.Name(), "selfcode-git-cred-") {
				t.Errorf("credential helper left behind: %s", path)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(b, secret) {
				t.Errorf("token found in %s", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(tmp, "selfcode-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

// Command runs git with the package's hardening: a repository's hooks and
// the user's git config do not run or apply.
func TestCommandIgnoresHooksAndUserConfig(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "hook-ran")
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[alias]\n\tci = !touch "+marker+"\n"), 0o644)
	t.Setenv("HOME", home)
	run := func(args ...string) error {
		out, err := Command(context.Background(), dir, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
		return nil
	}
	if err := run("init", "-q"); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "x"); err != nil {
		t.Fatal(err)
	}
	if run("ci") == nil {
		t.Error("the user's git config applied: alias ci ran")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook or an alias from outside ran on the host")
	}
}

// Secrets in the server's environment — the model key, the webhook
// secret, the App's key, anything else the operator set — never reach a
// git process (nor what git starts: the credential helper, remote
// helpers, which inherit its environment): every git selfcode runs,
// through a Git (mirrors, workspaces, pushes with a token) or through
// Command, Local and ExportLocal (`selfcode run` and `eval`), records its
// environment, which holds only the allow-listed variables and what
// selfcode sets.
func TestGitSeesNoServerSecrets(t *testing.T) {
	probes := map[string]string{
		"SELFCODE_LLM_API_KEY":    "sk-probe-llm-key-31337",
		"OPENAI_API_KEY":          "sk-probe-openai-31337",
		"SELFCODE_WEBHOOK_SECRET": "probe-webhook-secret-31337",
		"SELFCODE_PRIVATE_KEY":    "-----BEGIN RSA PRIVATE KEY----- probe-31337",
		"AWS_SECRET_ACCESS_KEY":   "probe-aws-31337",
		"GITHUB_TOKEN":            "ghp_probe31337",
		"DATABASE_URL":            "postgres://u:probe-db-31337@db/x",
	}
	for k, v := range probes {
		t.Setenv(k, v)
	}
	t.Setenv("TZ", "UTC") // allow-listed: it must get through
	h, ws := aWorkspace(t, "env", "selfcode/issue-5")
	ctx := t.Context()
	everyOperation(t, h, ws)

	// The package-level helpers find git on PATH.
	tools := t.TempDir()
	localEnv := filepath.Join(tools, "env.log")
	recordingGit(t, tools, requireGit(t), filepath.Join(tools, "argv.log"), localEnv)
	t.Setenv("PATH", tools+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	if out, err := Command(ctx, dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := Local(ctx, dir, []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"},
		"commit", "-q", "--allow-empty", "-m", "x"); err != nil {
		t.Fatal(err)
	}
	if err := ExportLocal(ctx, filepath.Join(dir, ".git"), "HEAD", t.TempDir()); err != nil {
		t.Fatal(err)
	}

	allowed := map[string]bool{
		// set by the recording script's shell
		"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true,
		// what selfcode sets
		"LC_ALL": true, "GIT_TERMINAL_PROMPT": true, "GIT_CONFIG_NOSYSTEM": true, "GIT_CONFIG_GLOBAL": true, "GIT_ASKPASS": true,
		"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true,
		"GIT_INDEX_FILE": true, "GIT_CEILING_DIRECTORIES": true, tokenEnv: true, hostEnv: true,
	}
	for _, k := range passEnv {
		allowed[k] = true
	}
	for _, log := range []string{h.envLog, localEnv} {
		raw, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		calls := strings.Split(strings.TrimSuffix(string(raw), "--- end\n"), "--- end\n")
		if len(calls) < 3 {
			t.Fatalf("%s recorded %d git calls", log, len(calls))
		}
		for i, env := range calls {
			sawTZ := false
			for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
				k, _, ok := strings.Cut(line, "=")
				if !ok {
					continue // the rest of a multi-line value
				}
				if !allowed[k] {
					t.Errorf("%s call %d: git got %s", filepath.Base(filepath.Dir(log)), i, k)
				}
				sawTZ = sawTZ || line == "TZ=UTC"
			}
			if !sawTZ {
				t.Errorf("call %d: the allow-listed TZ did not reach git:\n%s", i, env)
			}
			for k, v := range probes {
				if strings.Contains(env, v) {
					t.Errorf("call %d: the value of %s reached git", i, k)
				}
			}
		}
	}
}
