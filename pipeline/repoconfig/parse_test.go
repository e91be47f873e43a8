package repoconfig

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseContractExample(t *testing.T) {
	data, err := os.ReadFile("testdata/full.yml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Config{
		Image:        "golang:1.23-bookworm",
		Setup:        []string{"go mod download"},
		SetupNetwork: true,
		Verify: []Command{
			{Name: "build", Run: "go build ./..."},
			{Name: "test", Run: "go test ./...", Timeout: 10 * time.Minute},
		},
		Reports: []string{"**/junit*.xml"},
		Paths:   Paths{Allow: []string{"**"}, Deny: []string{"vendor/**"}, Protected: []string{"go.mod"}},
		Limits: Limits{MaxFiles: 10, MaxFixAttempts: 3, CIFixAttempts: 2, MaxSteps: 40, MaxTokens: 400000,
			JobTimeout: 45 * time.Minute, CommandTimeout: 10 * time.Minute, BlastRadius: 5, OutputBytes: 8 << 20},
		Enabled:        true,
		DraftOnFailure: true,
		Instructions:   "Run make generate after editing .proto files.\n",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, c *Config)
	}{
		{"empty file is defaults", "", func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("got %+v", c)
			}
		}},
		{"comment only is defaults", "# nothing\n", func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("got %+v", c)
			}
		}},
		{"null values keep defaults", "image:\nlimits:\n  max_files:\npaths:\n", func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("got %+v", c)
			}
		}},
		{"partial limits keep other defaults", "limits: {max_files: 2}", func(t *testing.T, c *Config) {
			want := Default().Limits
			want.MaxFiles = 2
			if c.Limits != want {
				t.Errorf("limits = %+v", c.Limits)
			}
		}},
		{"zero fix attempts and blast radius allowed", "limits: {max_fix_attempts: 0, blast_radius: 0}", func(t *testing.T, c *Config) {
			if c.Limits.MaxFixAttempts != 0 || c.Limits.BlastRadius != 0 {
				t.Errorf("limits = %+v", c.Limits)
			}
		}},
		{"disabled", "enabled: false\ndraft_on_failure: false\nsetup_network: false", func(t *testing.T, c *Config) {
			if c.Enabled || c.DraftOnFailure || c.SetupNetwork {
				t.Errorf("got %+v", c)
			}
		}},
		{"unnamed verify named after first word", "verify:\n  - run: go test ./...\n  - run: go vet ./...\n  - run: go build ./...\n", func(t *testing.T, c *Config) {
			var names []string
			for _, v := range c.Verify {
				names = append(names, v.Name)
			}
			if strings.Join(names, ",") != "go,go-2,go-3" {
				t.Errorf("names = %v", names)
			}
		}},
		{"anchor reuse in limits", "limits: {job_timeout: &d 30m, command_timeout: *d}", func(t *testing.T, c *Config) {
			if c.Limits.JobTimeout != 30*time.Minute || c.Limits.CommandTimeout != 30*time.Minute {
				t.Errorf("limits = %+v", c.Limits)
			}
		}},
		{"empty deny list", "paths: {deny: []}", func(t *testing.T, c *Config) {
			if c.Paths.Deny == nil || len(c.Paths.Deny) != 0 || len(c.Paths.Allow) != 1 {
				t.Errorf("paths = %+v", c.Paths)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		key  string
		line int
		msg  string
	}{
		{"unknown top key", "image: x\nimagee: y\n", "imagee", 2, "unknown key"},
		{"unknown null key", "\n\nfoo:\n", "foo", 3, "unknown key"},
		{"unknown limits key", "limits:\n  max_file: 3\n", "limits.max_file", 2, "unknown key"},
		{"unknown paths key", "paths:\n  allowed: ['**']\n", "paths.allowed", 2, "unknown key"},
		{"unknown verify key", "verify:\n  - run: x\n    cmd: y\n", "verify[0].cmd", 3, "unknown key"},
		{"verify without run", "verify:\n  - name: build\n", "verify[0]", 2, "needs a run command"},
		{"verify null run", "verify:\n  - {name: build, run: }\n", "verify[0]", 2, "needs a run command"},
		{"verify empty run", "verify:\n  - run: '  '\n", "verify[0].run", 2, "must not be empty"},
		{"verify duplicate name", "verify:\n  - {name: a, run: x}\n  - {name: a, run: y}\n", "verify[1].name", 3, "duplicate verify name"},
		{"verify not list", "verify: go test\n", "verify", 1, "must be a list"},
		{"verify item not mapping", "verify:\n  - go test\n", "verify[0]", 2, "must be a mapping"},
		{"bad verify timeout", "verify:\n  - {run: x, timeout: 10 minutes}\n", "verify[0].timeout", 2, "must be a duration"},
		{"integer timeout", "limits:\n  job_timeout: 600\n", "limits.job_timeout", 2, "must be a duration"},
		{"zero timeout", "limits:\n  command_timeout: 0s\n", "limits.command_timeout", 2, "must be positive"},
		{"negative timeout", "limits:\n  command_timeout: -1m\n", "limits.command_timeout", 2, "must be positive"},
		{"huge timeout", "limits:\n  job_timeout: 48h\n", "limits.job_timeout", 2, "at most 24h"},
		{"negative limit", "limits:\n  max_files: -1\n", "limits.max_files", 2, "must not be negative"},
		{"negative blast radius", "limits: {blast_radius: -2}\n", "limits.blast_radius", 1, "must not be negative"},
		{"zero max_files", "limits:\n  max_files: 0\n", "limits.max_files", 2, "at least 1"},
		{"float limit", "limits:\n  max_steps: 1.5\n", "limits.max_steps", 2, "whole number"},
		{"string limit", "limits:\n  max_tokens: lots\n", "limits.max_tokens", 2, "whole number"},
		{"overflowing limit", "limits:\n  max_tokens: 99999999999999\n", "limits.max_tokens", 2, "32 bits"},
		{"bad glob", "paths:\n  deny: ['vendor/[**']\n", "paths.deny[0]", 2, "invalid glob"},
		{"absolute glob", "paths:\n  allow: ['/src/**']\n", "paths.allow[0]", 2, "relative"},
		{"dotdot glob", "paths:\n  protected: ['../x']\n", "paths.protected[0]", 2, "must not contain .."},
		{"empty glob", "paths:\n  deny: ['']\n", "paths.deny[0]", 2, "must not be empty"},
		{"glob not list", "paths:\n  deny: vendor/**\n", "paths.deny", 2, "must be a list of globs"},
		{"bool as string", "enabled: 'no'\n", "enabled", 1, "must be true or false"},
		{"image number", "image: 12\n", "image", 1, "must be a string"},
		{"image with space", "image: 'golang 1.22'\n", "image", 1, "without spaces"},
		{"setup not list", "setup: go mod download\n", "setup", 1, "must be a list of commands"},
		{"setup empty item", "setup: ['']\n", "setup[0]", 1, "must not be empty"},
		{"setup non-string item", "setup:\n  - [a]\n", "setup[0]", 2, "must be a string"},
		{"top not mapping", "- a\n- b\n", "(document)", 1, "must be a mapping"},
		{"duplicate key", "image: a\nimage: b\n", "image", 2, "duplicate key"},
		{"merge key", "base: &b {max_files: 2}\nlimits:\n  <<: *b\n", "limits.<<", 3, "merge keys"},
		{"too long instructions", "instructions: " + strings.Repeat("x", MaxInstructions+1) + "\n", "instructions", 1, "bytes"},
		{"two documents", "image: a\n---\nimage: b\n", "(document)", 2, "single YAML document"},
		// The smoke stage.
		{"not a mapping", "smoke: yes\n", "smoke", 1, "must be a mapping"},
		{"no port", "image: x\nsmoke:\n  dockerfile: Dockerfile\n", "smoke", 3, "needs the port"},
		{"port too big", "smoke:\n  port: 70000\n", "smoke.port", 2, "from 1 to 65535"},
		{"port zero", "smoke:\n  port: 0\n", "smoke.port", 2, "at least 1"},
		{"port string", "smoke:\n  port: http\n", "smoke.port", 2, "whole number"},
		{"unknown key", "smoke:\n  port: 80\n  healthz: /\n", "smoke.healthz", 3, "unknown key"},
		{"dockerfile outside", "smoke:\n  port: 80\n  dockerfile: ../Dockerfile\n", "smoke.dockerfile", 3, "must not contain .."},
		{"dockerfile absolute", "smoke:\n  port: 80\n  dockerfile: /etc/passwd\n", "smoke.dockerfile", 3, "relative"},
		{"dockerfile dir", "smoke:\n  port: 80\n  dockerfile: .\n", "smoke.dockerfile", 3, "must name a file"},
		{"env list", "smoke:\n  port: 80\n  env: [A=1]\n", "smoke.env", 3, "must be a mapping"},
		{"env bad name", "smoke:\n  port: 80\n  env:\n    1X: y\n", "smoke.env.1X", 4, "not a variable name"},
		{"env nested", "smoke:\n  port: 80\n  env:\n    X: {a: b}\n", "smoke.env.X", 4, "plain value"},
		{"health path relative", "smoke:\n  port: 80\n  health: {path: health}\n", "smoke.health.path", 3, "starting with a single /"},
		{"health path space", "smoke:\n  port: 80\n  health:\n    path: /a b\n", "smoke.health.path", 4, "spaces"},
		{"health status", "smoke:\n  port: 80\n  health:\n    status: 999\n", "smoke.health.status", 4, "100 to 599"},
		{"health timeout", "smoke:\n  port: 80\n  health: {timeout: soon}\n", "smoke.health.timeout", 3, "must be a duration"},
		{"health longer than stage", "smoke:\n  port: 80\n  health: {timeout: 10m}\n", "smoke.health.timeout", 3, "shorter than the whole stage"},
		{"stage shorter than default health", "smoke:\n  port: 80\n  timeout: 30s\n", "smoke.timeout", 3, "shorter than the whole stage"},
		{"requests not list", "smoke:\n  port: 80\n  requests: /api\n", "smoke.requests", 3, "must be a list"},
		{"request without path", "smoke:\n  port: 80\n  requests:\n    - {method: GET}\n", "smoke.requests[0]", 4, "needs a path"},
		{"request method", "smoke:\n  port: 80\n  requests:\n    - {method: FETCH, path: /}\n", "smoke.requests[0].method", 4, "must be one of"},
		{"request url", "smoke:\n  port: 80\n  requests:\n    - path: http://evil.example/\n", "smoke.requests[0].path", 4, "starting with a single /"},
		{"request scheme-relative", "smoke:\n  port: 80\n  requests:\n    - path: //evil.example/\n", "smoke.requests[0].path", 4, "starting with a single /"},
		{"body_contains number", "smoke:\n  port: 80\n  requests:\n    - {path: /, body_contains: 3}\n", "smoke.requests[0].body_contains", 4, "must be a string"},
		{"read_only string", "smoke:\n  port: 80\n  read_only: 'no'\n", "smoke.read_only", 3, "true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) holds no *FieldError", err, err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *ValidationError", err)
			}
			for _, p := range ve.Problems {
				if p.Key == tt.key && p.Line == tt.line && strings.Contains(p.Msg, tt.msg) {
					if !strings.Contains(err.Error(), tt.key) {
						t.Errorf("message %q does not name key %q", err, tt.key)
					}
					return
				}
			}
			t.Errorf("no problem with key %q line %d containing %q in:\n%v", tt.key, tt.line, tt.msg, err)
		})
	}
}

func TestParseReportsAllProblems(t *testing.T) {
	_, err := Parse([]byte("imagee: x\nlimits:\n  max_files: -3\n  job_timeout: soon\n"))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if len(ve.Problems) != 3 {
		t.Errorf("got %d problems, want 3:\n%v", len(ve.Problems), err)
	}
	for i, wantLine := range []int{1, 3, 4} {
		if i < len(ve.Problems) && ve.Problems[i].Line != wantLine {
			t.Errorf("problem %d at line %d, want %d", i, ve.Problems[i].Line, wantLine)
		}
	}
}

func TestParseSyntaxError(t *testing.T) {
	_, err := Parse([]byte("image: [unclosed\n"))
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("err = %v, want ErrSyntax", err)
	}
	if !strings.Contains(err.Error(), "line") {
		t.Errorf("syntax error %q has no line", err)
	}
}

func TestLoad(t *testing.T) {
	t.Run("absent file is defaults", func(t *testing.T) {
		c, err := Load(t.TempDir())
		if err != nil || !reflect.DeepEqual(c, Default()) {
			t.Fatalf("Load = %+v, %v", c, err)
		}
	})
	t.Run("reads file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte("limits: {max_files: 4}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(dir)
		if err != nil || c.Limits.MaxFiles != 4 {
			t.Fatalf("Load = %+v, %v", c, err)
		}
	})
	t.Run("invalid file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte("limits: {max_files: x}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var fe *FieldError
		if _, err := Load(dir); !errors.As(err, &fe) || fe.Key != "limits.max_files" {
			t.Fatalf("Load err = %v", err)
		}
	})
	t.Run("symlink refused", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "secret.yml")
		if err := os.WriteFile(target, []byte("image: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, FileName)); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Load err = %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		dir := t.TempDir()
		big := "# " + strings.Repeat("x", MaxFileSize) + "\n"
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "at most") {
			t.Fatalf("Load err = %v", err)
		}
	})
}

func TestVerifyCommands(t *testing.T) {
	names := func(cmds []Command) string {
		var s []string
		for _, c := range cmds {
			s = append(s, c.Name+"="+c.Run)
		}
		return strings.Join(s, "; ")
	}
	tests := []struct {
		name     string
		cfg      string
		dir      string
		want     string
		inferred bool
	}{
		{"go.mod", "", "testdata/gomod", "build=go build ./...; vet=go vet ./...; test=go test ./...", true},
		{"makefile test target", "", "testdata/makefile", "test=make test", true},
		{"go.mod wins over Makefile", "", "testdata/both", "build=go build ./...; vet=go vet ./...; test=go test ./...", true},
		{"nothing to infer", "", "testdata/none", "", false},
		{"make variables are not targets", "", "testdata/makevar", "", false},
		{"configured wins", "verify: [{name: t, run: ./t.sh}]", "testdata/gomod", "t=./t.sh", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			got := c.VerifyCommands(tt.dir)
			if names(got) != tt.want {
				t.Errorf("VerifyCommands = %q, want %q", names(got), tt.want)
			}
			for _, cmd := range got {
				if cmd.Inferred != tt.inferred {
					t.Errorf("%s Inferred = %v", cmd.Name, cmd.Inferred)
				}
				if cmd.Timeout != c.Limits.CommandTimeout {
					t.Errorf("%s Timeout = %v, want %v", cmd.Name, cmd.Timeout, c.Limits.CommandTimeout)
				}
			}
		})
	}
	t.Run("own timeout kept", func(t *testing.T) {
		c, err := Parse([]byte("verify: [{run: x, timeout: 2m}]\nlimits: {command_timeout: 5m}"))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.VerifyCommands("testdata/none"); len(got) != 1 || got[0].Timeout != 2*time.Minute {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("result does not alias config", func(t *testing.T) {
		c, err := Parse([]byte("verify: [{run: x}]"))
		if err != nil {
			t.Fatal(err)
		}
		c.VerifyCommands("testdata/none")[0].Run = "changed"
		if c.Verify[0].Run != "x" || c.Verify[0].Timeout != 0 {
			t.Errorf("config changed: %+v", c.Verify[0])
		}
	})
}

func TestHash(t *testing.T) {
	base := "image: a\nsetup: [s]\nverify: [{name: t, run: go test ./...}]\n"
	hash := func(y string) string {
		t.Helper()
		c, err := Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return c.Hash()
	}
	h := hash(base)
	if len(h) != 64 || h != hash(base) {
		t.Fatalf("hash %q not stable", h)
	}
	same := []string{
		base + "instructions: hello\n",
		base + "limits: {max_files: 3, max_steps: 5, job_timeout: 1h}\n",
		base + "paths: {deny: [vendor/**]}\nenabled: false\n",
		"# reordered\nverify: [{name: t, run: go test ./...}]\nsetup: [s]\nimage: a\n",
		base + "limits: {command_timeout: 10m}\n", // default made explicit
	}
	for _, y := range same {
		if hash(y) != h {
			t.Errorf("hash changed for %q", y)
		}
	}
	differ := []string{
		"image: b\nsetup: [s]\nverify: [{name: t, run: go test ./...}]\n",
		"image: a\nsetup: [s, s2]\nverify: [{name: t, run: go test ./...}]\n",
		"image: a\nsetup: [\"s\\x00\"]\nverify: [{name: t, run: go test ./...}]\n",
		base + "setup_network: false\n",
		base + "limits: {command_timeout: 11m}\n",
		"image: a\nsetup: [s]\nverify: [{name: t, run: go test ./..., timeout: 1m}]\n",
		"image: a\nsetup: [s]\nverify: [{name: u, run: go test ./...}]\n",
		"image: a\nsetup: [s]\nverify: [{name: t, run: go test -race ./...}]\n",
		"image: a\nsetup: [s]\n",
	}
	seen := map[string]string{h: base}
	for _, y := range differ {
		got := hash(y)
		if prev, dup := seen[got]; dup {
			t.Errorf("hash of %q equals hash of %q", y, prev)
		}
		seen[got] = y
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{"", "image: x", "verify: [{run: a}]", "limits: {max_files: 1}", "a: &a [*a]",
		"paths: {deny: ['[']}", "- - -", "limits: {job_timeout: 1h}", "x: !!binary aGk=", "? [a]\n: b"}
	if data, err := os.ReadFile("testdata/full.yml"); err == nil {
		seeds = append(seeds, string(data))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err == nil {
			if c == nil {
				t.Fatal("nil config without error")
			}
			_ = c.Hash()
			if c.Limits.MaxFiles < 1 || c.Limits.MaxSteps < 1 || c.Limits.JobTimeout <= 0 || c.Limits.CommandTimeout <= 0 {
				t.Fatalf("invalid limits accepted: %+v", c.Limits)
			}
			for _, v := range c.Verify {
				if strings.TrimSpace(v.Run) == "" || v.Name == "" {
					t.Fatalf("invalid verify accepted: %+v", v)
				}
			}
		} else if c != nil {
			t.Fatal("config returned with error")
		}
	})
}
