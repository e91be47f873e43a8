package secretscan

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// Credential-shaped values, made up and split so that this file is not one.
var (
	githubPAT   = "ghp_" + "R8yKqW3nX7pL2mZ9vB4cT6hJ1sD5fG0aE8uQ"
	githubFine  = "github_pat_" + "11ABCDEFG0Zx9Yq8Wv7Ut6_Sr5Qp4On3Ml2Kj1Ih0Gf9Ed8Cb7Az6Yx5Wv4Ut3Sr2Qp1On0Ml9Kj8Ih7Gf6"
	awsKeyID    = "AKIA" + "Z3MT7QWERTYUIOPA"
	slackBot    = "xoxb-" + "1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	stripeLive  = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc9Xy"
	gcpAPIKey   = "AIza" + "SyD3xQ8rT5vB7nM2kL9pW4jH6gF1sA0eZcY"
	privateKey  = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naNZT+nN6s+k1xnOHsgRhP+zyzdmzhYFx92OZR6M+vVeOJwsgL3zl1oMB7Nc8sQfx\n-----END RSA " + "PRIVATE KEY-----"
	genericHigh = "9f8e7d6c5b4a3928" + "1726354f5e6d7c8b"
)

var (
	once    sync.Once
	shared  *Scanner
	initErr error
)

func scanner(t *testing.T) *Scanner {
	t.Helper()
	once.Do(func() { shared, initErr = New() })
	if initErr != nil {
		t.Fatal(initErr)
	}
	return shared
}

// gitDiff commits before, writes after, and returns `git diff` between
// them as selfcode's gitops prints it: real git output.
func gitDiff(t *testing.T, before, after map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	write := func(files map[string]string) {
		for p, c := range files {
			full := filepath.Join(dir, p)
			if c == "" {
				os.Remove(full)
				continue
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	run("init", "--quiet")
	write(before)
	run("add", "--all")
	run("commit", "--quiet", "--allow-empty", "-m", "base")
	write(after)
	run("add", "--all")
	return run("diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "HEAD", "--")
}

func lines(n int, text string) string { return strings.Repeat("// filler\n", n) + text }

func TestScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after map[string]string
		want          []Finding // Description not compared
	}{
		{"a GitHub token in a new file", nil, map[string]string{"config/app.go": "package config\n\nconst Token = \"" + githubPAT + "\"\n"},
			[]Finding{{File: "config/app.go", Line: 3, Rule: "github-pat"}}},
		{"a fine-grained GitHub token deep in a changed file", map[string]string{"a.py": lines(40, "x = 1\n")},
			map[string]string{"a.py": lines(40, "x = 1\nTOKEN = '"+githubFine+"'\n")},
			[]Finding{{File: "a.py", Line: 42, Rule: "github-fine-grained-pat"}}},
		{"cloud and SaaS keys", nil, map[string]string{"deploy/env.js": "export const aws = '" + awsKeyID + "';\nexport const slack = '" + slackBot +
			"';\nexport const stripe = '" + stripeLive + "';\nexport const gcp = '" + gcpAPIKey + "';\n"},
			[]Finding{{File: "deploy/env.js", Line: 1, Rule: "aws-access-token"}, {File: "deploy/env.js", Line: 2, Rule: "slack-bot-token"},
				{File: "deploy/env.js", Line: 3, Rule: "stripe-access-token"}, {File: "deploy/env.js", Line: 4, Rule: "gcp-api-key"}}},
		{"a private key block", nil, map[string]string{"keys/id": "key:\n" + privateKey + "\n"},
			[]Finding{{File: "keys/id", Line: 2, Rule: "private-key"}}},
		{"a generic high-entropy assignment", nil, map[string]string{"settings.ini": "[api]\napi_key = \"" + genericHigh + "\"\n"},
			[]Finding{{File: "settings.ini", Line: 2, Rule: "generic-api-key"}}},
		{"an inline allow comment does not hide it", nil, map[string]string{"a.go": "var t = \"" + githubPAT + "\" // gitleaks:allow\n"},
			[]Finding{{File: "a.go", Line: 1, Rule: "github-pat"}}},
		{"a file name with spaces", nil, map[string]string{"my dir/é.txt": "token: " + githubPAT + "\n"},
			[]Finding{{File: "my dir/é.txt", Line: 1, Rule: "github-pat"}}},
		// What the change does not add is not its doing.
		{"a credential the change removes", map[string]string{"a.go": "var t = \"" + githubPAT + "\"\n"}, map[string]string{"a.go": "var t = \"\"\n"}, nil},
		{"a credential in unchanged context", map[string]string{"a.go": "var t = \"" + githubPAT + "\"\nvar x = 1\n"},
			map[string]string{"a.go": "var t = \"" + githubPAT + "\"\nvar x = 2\n"}, nil},
		{"ordinary code", nil, map[string]string{"a.go": "package a\n\nvar token = os.Getenv(\"TOKEN\")\nconst password = \"changeme\"\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			diff := gitDiff(t, tt.before, tt.after)
			got, redacted := scanner(t).Scan(context.Background(), diff)
			for i := range got {
				got[i].Description = ""
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("findings %+v\nwant     %+v\ndiff:\n%s", got, tt.want, diff)
			}
			for _, v := range []string{githubPAT, githubFine, awsKeyID, slackBot, stripeLive, gcpAPIKey, genericHigh, "MIIEowIBAAKCAQEA0Z3VS5JJ"} {
				if len(tt.want) > 0 && strings.Contains(redacted, v) {
					t.Errorf("the redacted diff still holds a flagged value:\n%s", redacted)
				}
				for _, f := range got {
					if strings.Contains(f.String(), v) || strings.Contains(f.Description, v) {
						t.Errorf("a finding carries the value: %+v", f)
					}
				}
			}
			if len(tt.want) == 0 && redacted != diff {
				t.Error("a clean diff was changed")
			}
		})
	}
}

func TestAddedLines(t *testing.T) {
	t.Parallel()
	diff := "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n keep\n-gone\n+++ not a header\n+two\n context\n" +
		"diff --git a/bin b/bin\nBinary files a/bin and b/bin differ\n" +
		"diff --git a/del b/del\ndeleted file mode 100644\n--- a/del\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
	got := addedLines(diff)
	want := []fileLines{{path: "x", text: []string{"++ not a header", "two"}, lines: []int{2, 3}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func FuzzAddedLines(f *testing.F) {
	f.Add("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	f.Add("+++ \"b/\\303\\251\"\n@@ -0,0 +7,2 @@\n+x")
	f.Fuzz(func(t *testing.T, diff string) {
		for _, fl := range addedLines(diff) {
			if len(fl.text) != len(fl.lines) {
				t.Fatalf("%d lines, %d numbers", len(fl.text), len(fl.lines))
			}
		}
	})
}
