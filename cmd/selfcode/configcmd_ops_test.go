package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runIn runs the CLI in dir and returns stdout+stderr and the exit status.
func runIn(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(testBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func TestConfigValidate(t *testing.T) {
	const pem = "-----BEGIN RSA PRIVATE KEY-----\nc2VsZmNvZGU=\n-----END RSA PRIVATE KEY-----\n"
	files := map[string]string{
		".selfcode.yml":    "image: golang:1.23-bookworm\nverify:\n  - {name: build, run: \"go build ./...\"}\n  - {name: test, run: \"go test ./...\", timeout: 10m}\npaths:\n  deny: [\"vendor/**\"]\nlimits: {max_files: 10, job_timeout: 45m}\n",
		"bad-repo.yml":     "verify:\n  - {name: test, run: \"go test ./...\", timeout: soon}\nlimits:\n  max_filez: 3\npaths:\n  deny: [\"[\"]\n",
		"broken.yml":       "verify: [\n",
		"bad-smoke.yml":    "verify:\n  - run: go test ./...\nsmoke:\n  port: 99999\n  requests:\n    - {method: GET}\n",
		"server.yml":       "addr: \":9000\"\nworkers: 4\novernight_schedule: \"30 1 * * 1-5\"\nwebhook_secret: s\napp_id: 12\n",
		"bad-server.yml":   "addr: \":9000\"\n# a comment\nworkers: 4\ntimezone: Mars/Olympus\n",
		"typo-server.yml":  "admin_addr: 127.0.0.1:9090\nworkrs: 4\ndata_dir: /var/lib/selfcode\n",
		"key-server.yml":   "private_key_path: /nonexistent/key.pem\nworkers: 2\n",
		"pem-server.yml":   "private_key: |\n" + indent(pem) + "webhook_secret: s\n",
		"enabled-only.yml": "enabled: false\n",
	}
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	tests := []struct {
		name  string
		dir   string
		args  []string
		code  int
		has   []string
		hasnt []string
	}{
		{"default file", dir, nil, 0, []string{".selfcode.yml: valid .selfcode.yml"}, nil},
		{"invalid repo file: every problem with line and key", dir, []string{"bad-repo.yml"}, 2,
			[]string{"bad-repo.yml line 2: verify[0].timeout:", "bad-repo.yml line 4: limits.max_filez: unknown key", "bad-repo.yml line 6: paths.deny", "3 problem(s)"}, nil},
		{"malformed smoke stage: line and key", dir, []string{"bad-smoke.yml"}, 2,
			[]string{"bad-smoke.yml line 4: smoke.port: must be a port number", "bad-smoke.yml line 6: smoke.requests[0]: needs a path", "2 problem(s)"}, nil},
		{"not YAML", dir, []string{"broken.yml"}, 2, []string{"broken.yml:", "line 1"}, nil},
		{"server file found by its keys", dir, []string{"server.yml"}, 0, []string{"server.yml: valid server configuration"}, []string{"note:"}},
		{"invalid server file", dir, []string{"bad-server.yml"}, 2, []string{"bad-server.yml line 4: timezone", "Mars/Olympus"}, nil},
		{"server key typo", dir, []string{"typo-server.yml"}, 2, []string{"typo-server.yml line 2: workrs: unknown key"}, nil},
		{"unreadable key file", dir, []string{"key-server.yml"}, 2, []string{"SELFCODE_PRIVATE_KEY_PATH", "key-server.yml"}, nil},
		{"inline key, notes on what is missing", dir, []string{"pem-server.yml"}, 0, []string{"valid server configuration", "note: app_id is not set"}, []string{"BEGIN RSA"}},
		{"--server forces the kind", dir, []string{"--server", "bad-repo.yml"}, 2, []string{"bad-repo.yml line 1: verify: unknown key"}, nil},
		{"--repo forces the kind", dir, []string{"--repo", "server.yml"}, 2, []string{"server.yml line 1: addr: unknown key"}, nil},
		{"ambiguous keys are a repository file", dir, []string{"enabled-only.yml"}, 0, []string{"valid .selfcode.yml"}, nil},
		{"both kinds at once", dir, []string{"--repo", "--server", "server.yml"}, 2, []string{"exclude each other"}, nil},
		{"missing default file", empty, nil, 2, []string{"read .selfcode.yml"}, nil},
		{"missing file", dir, []string{"nope.yml"}, 2, []string{"read nope.yml"}, nil},
		{"too many arguments", dir, []string{"a", "b"}, 2, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runIn(t, tt.dir, append([]string{"config", "validate"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, out)
			}
			for _, s := range tt.has {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.hasnt {
				if strings.Contains(out, s) {
					t.Errorf("output has %q:\n%s", s, out)
				}
			}
		})
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}

func TestConfigSchema(t *testing.T) {
	out, code := runIn(t, t.TempDir(), "config", "schema")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var schema struct {
		Schema     string                     `json:"$schema"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(out), &schema); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	for _, k := range []string{"image", "setup", "verify", "paths", "limits", "enabled", "draft_on_failure", "instructions"} {
		if _, ok := schema.Properties[k]; !ok {
			t.Errorf("schema lacks %s", k)
		}
	}
	committed, err := os.ReadFile(filepath.Join("..", "..", "pipeline", "repoconfig", "selfcode.schema.json"))
	if err != nil || string(committed) != out {
		t.Errorf("`config schema` differs from the committed schema file (%v)", err)
	}
}
