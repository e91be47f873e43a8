package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/internal/tripwire"
)

// everyOperation runs what a job does with git on ws: change, export the
// base, stage, diff, commit, push, reset.
func everyOperation(t *testing.T, h *harness, ws *Workspace) {
	t.Helper()
	ctx := t.Context()
	writeFile(t, filepath.Join(ws.Dir, "changed.txt"), "a change\n")
	writeFile(t, filepath.Join(ws.Dir, "main.go"), "package main\n\nfunc main() { println(1) }\n")
	if err := h.g.Export(ctx, ws, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.g.Diff(ctx, ws, ws.BaseSHA); err != nil {
		t.Fatal(err)
	}
	if _, err := h.g.ChangedFiles(ctx, ws, ws.BaseSHA); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.g.Commit(ctx, ws, "change"); err != nil {
		t.Fatal(err)
	}
	if err := h.g.PushSelfcodeBranch(ctx, ws, ws.Branch, "", StaticToken(testToken)); err != nil {
		t.Fatal(err)
	}
	// Back to the commit before: a submodule's commit differs there.
	if err := h.g.Reset(ctx, ws, "main~1"); err != nil {
		t.Fatal(err)
	}
}

// templateDir is a git template directory whose hooks are the wire.
func templateDir(t *testing.T, w *tripwire.Wire) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(w.Hooks(t), filepath.Join(dir, "hooks")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Whatever is planted in a job's git directory — hooks, an fsmonitor, a
// request to recurse into submodules — runs nothing: every selfcode git
// call overrides them (hardening). The git directory lives outside the
// checkout, so neither the model nor the sandbox can write it; this proves
// the second line of defence.
func TestPlantedGitConfigurationRunsNothing(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, ws *Workspace, w *tripwire.Wire)
	}{
		{"hooks", func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			w.Link(t, filepath.Join(ws.GitDir, "hooks"), tripwire.HookNames...)
		}},
		{"core.hooksPath", func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "core.hooksPath", w.Hooks(t))
		}},
		{"core.fsmonitor", func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "core.fsmonitor", w.Path)
		}},
		{"submodule recursion", func(t *testing.T, ws *Workspace, _ *tripwire.Wire) {
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "submodule.recurse", "true")
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "submodule.active", "*")
		}},
		// Drivers have names of the repository's choosing, which no fixed
		// -c option can name: the ones the configuration defines (here
		// through an include) are overridden call by call.
		{"filter, diff and merge drivers named by .gitattributes", func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			included := filepath.Join(t.TempDir(), "drivers")
			writeFile(t, included, "[filter \"Evil.x\"]\n\tclean = "+w.Path+"\n\tsmudge = "+w.Path+"\n\trequired = true\n"+
				"[merge \"evil\"]\n\tdriver = "+w.Path+"\n"+
				"[diff \"evil\"]\n\ttextconv = "+w.Path+"\n\tcommand = "+w.Path+"\n[diff]\n\texternal = "+w.Path+"\n")
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "include.path", included)
			writeFile(t, filepath.Join(ws.Dir, ".gitattributes"), "* filter=Evil.x diff=evil merge=evil\n")
		}},
		{"gpg, credential helper, pager, ssh", func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			for k, v := range map[string]string{"gpg.program": w.Path, "commit.gpgSign": "true", "log.showSignature": "true",
				"credential.helper": w.Path, "core.pager": w.Path, "core.sshCommand": w.Path, "core.askPass": w.Path} {
				runGit(t, "", "--git-dir="+ws.GitDir, "config", k, v)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remote := newFakeRemote(t)
			h := newHarness(t)
			human := remote.create(t, "acme", "widgets")
			// A submodule the repository declares (its URL a local repository).
			sub := remote.create(t, "acme", "sub")
			human.write(".gitmodules", "[submodule \"evil\"]\n\tpath = evil\n\turl = "+remote.barePath("acme", "sub")+"\n")
			runGit(t, human.dir, "add", ".gitmodules")
			for i := range 2 {
				sub.write("s.txt", fmt.Sprint(i))
				subSHA := sub.commit("sub")
				// The gitlink only (add --all would drop it: nothing is checked out).
				runGit(t, human.dir, "update-index", "--add", "--cacheinfo", "160000,"+subSHA+",evil")
				runGit(t, human.dir, "commit", "--quiet", "-m", "the submodule moves")
			}
			human.push("main")
			w := tripwire.New(t)
			ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: remote.repo("acme", "widgets"), ID: "hostile",
				Branch: "selfcode/issue-1", Base: "main", Token: StaticToken(testToken)})
			if err != nil {
				t.Fatal(err)
			}
			tt.plant(t, ws, w)
			everyOperation(t, h, ws)
			w.Untouched(t, tt.name)
			if ents, _ := os.ReadDir(filepath.Join(ws.Dir, "evil")); len(ents) != 0 {
				t.Fatalf("the submodule was checked out: %v", ents)
			}
		})
	}
}

// aWorkspace is a workspace named id on branch of a repository with one
// file, a.txt.
func aWorkspace(t *testing.T, id, branch string) (*harness, *Workspace) {
	t.Helper()
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	human.write("a.txt", "a\n")
	human.commit("a")
	human.push("main")
	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: remote.repo("acme", "widgets"), ID: id,
		Branch: branch, Base: "main", Token: StaticToken(testToken)})
	if err != nil {
		t.Fatal(err)
	}
	return h, ws
}

// A driver name git's -c syntax cannot override is refused, not run.
func TestUnnameableDriverRefusesTheCall(t *testing.T) {
	h, ws := aWorkspace(t, "unnameable", "selfcode/issue-9")
	w := tripwire.New(t)
	cfg, err := os.ReadFile(filepath.Join(ws.GitDir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.GitDir, "config"), string(cfg)+"[filter \"a=b\"]\n\tclean = "+w.Path+"\n\trequired = true\n")
	writeFile(t, filepath.Join(ws.Dir, ".gitattributes"), "* filter=a=b\n")
	writeFile(t, filepath.Join(ws.Dir, "a.txt"), "changed\n")
	if _, _, err := h.g.Commit(t.Context(), ws, "change"); !errors.Is(err, ErrUnsafeConfig) {
		t.Fatalf("commit = %v, want ErrUnsafeConfig", err)
	}
	w.Untouched(t, "a filter with an unnameable name")
}

// A repository's .gitattributes may name filter, diff, textconv and merge
// drivers (and LFS); a host with such drivers defined in its git
// configuration — system, global, XDG, or GIT_CONFIG_* in the environment
// — still runs none of them for a job, nor the host's hooks or fsmonitor:
// selfcode's git reads only the configuration selfcode wrote.
func TestHostGitConfigurationNeverApplies(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	human.write(".gitattributes", "* filter=evil diff=evil merge=evil\n*.bin filter=lfs diff=lfs merge=lfs -text\n")
	human.write(".lfsconfig", "[lfs]\n\turl = http://127.0.0.1:1/lfs\n")
	human.write("data.bin", "binary\n")
	human.commit("attributes naming drivers")
	human.push("main")

	w := tripwire.New(t)
	trapPath := w.Path
	cfg := strings.Join([]string{
		"[core]", "\thooksPath = " + w.Hooks(t), "\tfsmonitor = " + trapPath, "\tattributesFile = " + filepath.Join(t.TempDir(), "none"),
		"[filter \"evil\"]", "\tclean = " + trapPath, "\tsmudge = " + trapPath, "\trequired = true",
		"[filter \"lfs\"]", "\tclean = " + trapPath, "\tsmudge = " + trapPath, "\trequired = true",
		"[diff \"evil\"]", "\ttextconv = " + trapPath, "\tcommand = " + trapPath,
		"[diff]", "\texternal = " + trapPath,
		"[merge \"evil\"]", "\tdriver = " + trapPath,
		"[submodule]", "\trecurse = true",
		"[init]", "\ttemplateDir = " + templateDir(t, w),
		"[credential]", "\thelper = " + trapPath,
		"",
	}, "\n")
	home, xdg := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".gitconfig"), cfg)
	writeFile(t, filepath.Join(xdg, "git", "config"), cfg)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("GIT_CONFIG_COUNT", "2")
	t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
	t.Setenv("GIT_CONFIG_VALUE_0", w.Hooks(t))
	t.Setenv("GIT_CONFIG_KEY_1", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_1", trapPath)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'filter.evil.smudge'='"+trapPath+"'")
	t.Setenv("GIT_EXTERNAL_DIFF", trapPath)

	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: remote.repo("acme", "widgets"), ID: "attrs",
		Branch: "selfcode/issue-2", Base: "main", Token: StaticToken(testToken)})
	if err != nil {
		t.Fatal(err)
	}
	everyOperation(t, h, ws)
	if _, err := h.g.ReadFileAt(context.Background(), ws, "main", ".gitattributes"); err != nil {
		t.Fatal(err)
	}
	w.Untouched(t, "a host git driver, hook or fsmonitor")
}

// A change that adds a credential-shaped string is not pushed — not to a
// selfcode branch, not to someone's pull request branch — and the refusal
// names the file and line, never the value; a credential already on the
// base is not the change's doing.
func TestPushRefusesCredentials(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	token := "ghp_" + "R8yKqW3nX7pL2mZ9vB4cT6hJ1sD5fG0aE8uQ"
	human.write("legacy.txt", "old = "+"AKIA"+"Z3MT7QWERTYUIOPA\n")
	human.commit("a key someone committed long ago")
	human.push("main")
	human.push("main:feature")
	ctx := t.Context()
	tok := StaticToken(testToken)
	for _, tc := range []struct {
		branch string
		push   func(ws *Workspace) error
	}{
		{"selfcode/issue-3", func(ws *Workspace) error { return h.g.PushSelfcodeBranch(ctx, ws, ws.Branch, "", tok) }},
		{"feature", func(ws *Workspace) error { return h.g.PushFastForward(ctx, ws, ws.Branch, tok) }},
	} {
		ws, err := h.g.NewWorkspace(ctx, WorkspaceOptions{Repo: remote.repo("acme", "widgets"), ID: "s-" + strings.ReplaceAll(tc.branch, "/", "-"),
			Branch: tc.branch, Base: "main", Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		before := remote.bareSHA(t, "acme", "widgets", "refs/heads/"+tc.branch)
		writeFile(t, filepath.Join(ws.Dir, "main.go"), "package main\n\n// client\nvar token = \""+token+"\"\n\nfunc main() {}\n")
		if _, _, err := h.g.Commit(ctx, ws, "use the API"); err != nil {
			t.Fatal(err)
		}
		err = tc.push(ws)
		var se *SecretsError
		if !errors.Is(err, ErrSecretFound) || !errors.As(err, &se) || len(se.Findings) != 1 ||
			se.Findings[0].File != "main.go" || se.Findings[0].Line != 4 {
			t.Fatalf("%s: push = %v, want a refusal naming main.go:4", tc.branch, err)
		}
		if strings.Contains(err.Error(), token) || strings.Contains(h.logs.String(), token) {
			t.Fatalf("the value is in the error or the logs: %v", err)
		}
		if after := remote.bareSHA(t, "acme", "widgets", "refs/heads/"+tc.branch); after != before {
			t.Fatalf("%s moved on the remote: %s → %s", tc.branch, before, after)
		}
		diff, err := h.g.Diff(ctx, ws, ws.BaseSHA)
		if err != nil {
			t.Fatal(err)
		}
		if red := h.g.RedactSecrets(ctx, diff); strings.Contains(red, token) || !strings.Contains(red, "[REDACTED]") || !strings.Contains(red, "// client") {
			t.Fatalf("redacted diff:\n%s", red)
		}
		// A later commit that removes it does not take it out of the
		// history being pushed.
		writeFile(t, filepath.Join(ws.Dir, "main.go"), "package main\n\n// client\nvar token = os.Getenv(\"TOKEN\")\n\nfunc main() {}\n")
		if _, _, err := h.g.Commit(ctx, ws, "read it from the environment"); err != nil {
			t.Fatal(err)
		}
		if err := tc.push(ws); !errors.Is(err, ErrSecretFound) {
			t.Fatalf("%s: a history holding a credential was pushed: %v", tc.branch, err)
		}
		// Rebuilt without it, the same branch pushes.
		if err := h.g.Reset(ctx, ws, ws.BaseSHA); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(ws.Dir, "main.go"), "package main\n\n// client\nvar token = os.Getenv(\"TOKEN\")\n\nfunc main() {}\n")
		if _, _, err := h.g.Commit(ctx, ws, "read it from the environment"); err != nil {
			t.Fatal(err)
		}
		if err := tc.push(ws); err != nil {
			t.Fatalf("%s: a clean change was refused: %v", tc.branch, err)
		}
	}
}

// A workspace's driver overrides are read once and kept while nothing
// they come from changes, yet a driver planted after that read — the
// configuration rewritten, an include that was missing now written, an
// included file changed in place to the same size and time, an includeIf
// onbranch: that comes true — is overridden by the very next call all
// the same.
func TestDriversPlantedAfterACachedRead(t *testing.T) {
	tests := []struct {
		name   string
		before func(t *testing.T, ws *Workspace, w *tripwire.Wire) // before the first read
		plant  func(t *testing.T, ws *Workspace, w *tripwire.Wire) // after it
	}{
		{"the configuration rewritten", nil, func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "filter.evil.clean", w.Path)
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "filter.evil.required", "true")
		}},
		{"an include that was missing", func(t *testing.T, ws *Workspace, _ *tripwire.Wire) {
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "include.path", "later")
		}, func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			writeFile(t, filepath.Join(ws.GitDir, "later"), "[filter \"evil\"]\n\tclean = "+w.Path+"\n\trequired = true\n")
		}},
		{"an included file changed in place, same size and time", func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			writeFile(t, filepath.Join(ws.GitDir, "extra"), "[filter \"good\"]\n\tclean = /"+strings.Repeat("x", len(w.Path)-1)+"\n")
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "include.path", "extra")
		}, func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			p := filepath.Join(ws.GitDir, "extra")
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("[filter \"evil\"]\n\tclean = " + w.Path + "\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
				t.Fatal(err)
			}
			if after, err := os.Stat(p); err != nil || after.Size() != info.Size() {
				t.Fatalf("the planted file is not the same size: %v", err)
			}
		}},
		{"an includeIf onbranch: that comes true", func(t *testing.T, ws *Workspace, w *tripwire.Wire) {
			writeFile(t, filepath.Join(ws.GitDir, "on-evil"), "[filter \"evil\"]\n\tclean = "+w.Path+"\n\trequired = true\n")
			runGit(t, "", "--git-dir="+ws.GitDir, "config", "includeIf.onbranch:evil.path", "on-evil")
		}, func(t *testing.T, ws *Workspace, _ *tripwire.Wire) {
			runGit(t, "", "--git-dir="+ws.GitDir, "update-ref", "refs/heads/evil", "HEAD")
			runGit(t, "", "--git-dir="+ws.GitDir, "symbolic-ref", "HEAD", "refs/heads/evil")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ws := aWorkspace(t, "planted-later", "selfcode/issue-1")
			w := tripwire.New(t)
			if tt.before != nil {
				tt.before(t, ws, w)
			}
			reads := func() int {
				t.Helper()
				argv, err := os.ReadFile(h.argvLog)
				if err != nil {
					t.Fatal(err)
				}
				return strings.Count(string(argv), "\n--show-origin\n")
			}
			// Read and kept: the calls after the first read nothing again.
			if _, err := h.g.ChangedFiles(t.Context(), ws, ws.BaseSHA); err != nil {
				t.Fatal(err)
			}
			n := reads()
			for range 3 {
				if _, err := h.g.Diff(t.Context(), ws, ws.BaseSHA); err != nil {
					t.Fatal(err)
				}
			}
			if reads() != n {
				t.Errorf("the configuration was read %d more times with nothing changed", reads()-n)
			}
			tt.plant(t, ws, w)
			writeFile(t, filepath.Join(ws.Dir, ".gitattributes"), "* filter=evil\n")
			writeFile(t, filepath.Join(ws.Dir, "a.txt"), "changed\n")
			if _, _, err := h.g.Commit(t.Context(), ws, "change"); err != nil {
				t.Fatal(err)
			}
			w.Untouched(t, tt.name)
		})
	}
}

// A change that marks its own files as binary in .gitattributes (`-diff`,
// or the `binary` macro) cannot hide a credential from the push's scan:
// git would print "Binary files differ" for them, so the scan reads their
// content regardless of attributes — a file with NUL bytes too — and the
// refusal names each file and line.
func TestPushScanIgnoresAttributes(t *testing.T) {
	token := "ghp_" + "R8yKqW3nX7pL2mZ9vB4cT6hJ1sD5fG0aE8uQ"
	for _, tc := range []struct {
		name, attributes, file, content string
		line                            int
	}{
		{"-diff", "*.cfg -diff\n", "app.cfg", "# settings\nname = widgets\ntoken = \"" + token + "\"\n", 3},
		{"binary macro", "secrets/** binary\n", "secrets/app.env", "A=1\nGITHUB_TOKEN=" + token + "\n", 2},
		{"NUL bytes", "", "blob.dat", "\x00\x01\x02binary\nkey = \"" + token + "\"\n\x00", 2},
		{"attributes in a subfolder", "", "conf/app.ini", "x\ny\nz\npassword_token = \"" + token + "\"\n", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ws := aWorkspace(t, "attr", "selfcode/issue-9")
			ctx, tok := t.Context(), StaticToken(testToken)
			if tc.attributes != "" {
				writeFile(t, filepath.Join(ws.Dir, ".gitattributes"), tc.attributes)
			}
			if tc.name == "attributes in a subfolder" {
				writeFile(t, filepath.Join(ws.Dir, "conf", ".gitattributes"), "* -diff -text\n")
			}
			writeFile(t, filepath.Join(ws.Dir, tc.file), tc.content)
			if _, _, err := h.g.Commit(ctx, ws, "settings"); err != nil {
				t.Fatal(err)
			}
			err := h.g.PushSelfcodeBranch(ctx, ws, ws.Branch, "", tok)
			var se *SecretsError
			if !errors.Is(err, ErrSecretFound) || !errors.As(err, &se) || len(se.Findings) == 0 ||
				se.Findings[0].File != tc.file || se.Findings[0].Line != tc.line {
				t.Fatalf("push = %v, want a refusal naming %s:%d", err, tc.file, tc.line)
			}
			if strings.Contains(err.Error(), token) {
				t.Fatalf("the value is in the error: %v", err)
			}
			if sha, err := h.g.RemoteBranchSHA(ctx, ws.Repo, ws.Branch, tok); err != nil || sha != "" {
				t.Fatalf("the branch is on the remote: %q, %v", sha, err)
			}
		})
	}
}
