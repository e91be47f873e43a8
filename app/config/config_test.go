package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Config{
		Addr:                 ":8080",
		AdminAddr:            "127.0.0.1:9090",
		DataDir:              "./data",
		GitHubAPIURL:         "https://api.github.com/",
		LLMBaseURL:           "https://api.openai.com/v1",
		LLMModel:             "gpt-4.1",
		SandboxImage:         "selfcode-sandbox:latest",
		Workers:              2,
		Command:              "/selfcode",
		Label:                "selfcode",
		OvernightLabel:       "selfcode:overnight",
		OvernightSchedule:    "0 2 * * *",
		Timezone:             "UTC",
		OvernightMaxDuration: 45 * time.Minute,
		Enabled:              true,
		CIApps:               "github-actions",
		ShutdownTimeout:      30 * time.Second,
		LogLevel:             "info",
		OvernightWindow:      6 * time.Hour,
		SandboxMemoryMB:      2048,
		SandboxMilliCPUs:     1000,
		SandboxPids:          512,
		CacheMaxBytes:        10 << 30,
		PublishGrace:         2 * time.Minute,
		SmokeEnabled:         true,
	}
	assertSettings(t, c, want)
	if c.Location() != time.UTC {
		t.Errorf("Location = %v, want UTC", c.Location())
	}
	from := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	if got, want := c.Schedule().Next(from), time.Date(2025, 3, 5, 2, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Schedule().Next(%v) = %v, want %v", from, got, want)
	}
	if c.SlogLevel() != slog.LevelInfo {
		t.Errorf("SlogLevel = %v", c.SlogLevel())
	}
	assertSettings(t, Default(), want)
}

// assertSettings compares the exported settings only.
func assertSettings(t *testing.T, got *Config, want Config) {
	t.Helper()
	for _, f := range fields() {
		g := reflect.ValueOf(*got).Field(f.index).Interface()
		w := reflect.ValueOf(want).Field(f.index).Interface()
		if g != w {
			t.Errorf("%s = %#v, want %#v", f.Name, g, w)
		}
	}
}

func TestLoadFile(t *testing.T) {
	c, err := Load(LoadOptions{File: "testdata/full.yaml"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	assertSettings(t, c, Config{
		Addr:                 ":9000",
		AdminAddr:            "127.0.0.1:9999",
		DataDir:              "/var/lib/selfcode",
		WebhookSecret:        "yaml-webhook-secret",
		AppID:                12345,
		PrivateKeyPath:       "/etc/selfcode/key.pem",
		GitHubAPIURL:         "https://ghe.example.com/api/v3/",
		LLMBaseURL:           "http://127.0.0.1:11434/v1",
		LLMAPIKey:            "yaml-llm-key",
		LLMModel:             "big-model",
		LLMModelPlanner:      "planner-model",
		LLMModelFixer:        "fixer-model",
		SandboxImage:         "golang:1.23-bookworm",
		Workers:              4,
		Command:              "/bot",
		Label:                "bot",
		OvernightLabel:       "bot:night",
		OvernightSchedule:    "30 1 * * 1-5",
		Timezone:             "Europe/Berlin",
		OvernightMaxDuration: 90 * time.Minute,
		ReportWebhookURL:     "https://hooks.example.com/report",
		DailyTokenBudget:     500000,
		Enabled:              false,
		CIApps:               "github-actions, buildkite",
		ShutdownTimeout:      10 * time.Second,
		LogLevel:             "debug",
		OvernightWindow:      4 * time.Hour,
		SandboxRuntime:       "runsc",
		SandboxMemoryMB:      4096,
		SandboxMilliCPUs:     1500,
		SandboxPids:          256,
		CacheMaxBytes:        1 << 30,
		DailyCostBudget:      12.5,
		ModelPrices:          "big-model=3,1.5,15; planner-model=1,0.1,4; fixer-model=0.5,0.05,2",
		PublishGrace:         3 * time.Minute,
		SmokeEnabled:         false,
	})
	if got := c.CIAppSlugs(); !reflect.DeepEqual(got, []string{"github-actions", "buildkite"}) {
		t.Errorf("CIAppSlugs = %q", got)
	}
	if p, ok := c.Prices().Lookup("planner-model"); !ok || p.Output != 4 {
		t.Errorf("planner-model price %+v, %v", p, ok)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if c.Location().String() != berlin.String() {
		t.Errorf("Location = %v", c.Location())
	}
	// Friday noon UTC → next weekday 01:30 Berlin is Monday 01:30 CET = 00:30 UTC.
	from := time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC)
	want := time.Date(2025, 1, 13, 1, 30, 0, 0, berlin)
	if got := c.Schedule().Next(from); !got.Equal(want) {
		t.Errorf("Schedule().Next(%v) = %v, want %v", from, got, want)
	}
	if c.SlogLevel() != slog.LevelDebug {
		t.Errorf("SlogLevel = %v", c.SlogLevel())
	}
}

func TestLoadFileEdgeCases(t *testing.T) {
	tests := []struct {
		file  string
		check func(*Config) error
	}{
		{"testdata/empty.yaml", func(c *Config) error {
			if c.Workers != 2 || c.Addr != ":8080" {
				return fmt.Errorf("defaults not kept: %v", c)
			}
			return nil
		}},
		{"testdata/alias.yaml", func(c *Config) error {
			if c.Label != "mylabel" || c.OvernightLabel != "mylabel" {
				return fmt.Errorf("alias not resolved: label=%q overnight_label=%q", c.Label, c.OvernightLabel)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			c, err := Load(LoadOptions{File: tt.file})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if err := tt.check(c); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestEnvBeatsYAML(t *testing.T) {
	c, err := Load(LoadOptions{
		File: "testdata/partial.yaml",
		Environ: []string{
			"SELFCODE_WORKERS=5",
			"SELFCODE_LLM_MODEL=env-model",
			"SELFCODE_WORKERS=7", // the first entry wins, as with os.Getenv
			"SELFCODE_LABEL=",    // empty counts as unset
			"UNRELATED=1",
			"NOEQUALS",
		},
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Workers != 5 {
		t.Errorf("Workers = %d, want 5 (env)", c.Workers)
	}
	if c.LLMModel != "env-model" {
		t.Errorf("LLMModel = %q, want env-model", c.LLMModel)
	}
	if c.WebhookSecret != "yaml-webhook-secret" {
		t.Errorf("WebhookSecret not taken from YAML")
	}
	if c.Label != "selfcode" {
		t.Errorf("Label = %q, want the default", c.Label)
	}
}

func TestLLMAPIKeyFallback(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		environ []string
		want    string
	}{
		{"nothing", "", nil, ""},
		{"openai only", "", []string{"OPENAI_API_KEY=sk-openai"}, "sk-openai"},
		{"selfcode wins", "", []string{"OPENAI_API_KEY=sk-openai", "SELFCODE_LLM_API_KEY=sk-selfcode"}, "sk-selfcode"},
		{"empty selfcode falls back", "", []string{"SELFCODE_LLM_API_KEY=", "OPENAI_API_KEY=sk-openai"}, "sk-openai"},
		{"yaml beats the fallback", "testdata/full.yaml", []string{"OPENAI_API_KEY=sk-openai"}, "yaml-llm-key"},
		{"env beats yaml", "testdata/full.yaml", []string{"SELFCODE_LLM_API_KEY=sk-selfcode"}, "sk-selfcode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(LoadOptions{File: tt.file, Environ: tt.environ})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.LLMAPIKey != tt.want {
				t.Errorf("LLMAPIKey = %q, want %q", c.LLMAPIKey, tt.want)
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		environ  []string
		wantKey  string // FieldError.Key
		wantLine int
		wantIs   error
	}{
		{name: "unknown yaml key", file: "unknown_key.yaml", wantKey: "workrs", wantLine: 3, wantIs: ErrUnknownKey},
		{name: "yaml bad duration", file: "bad_duration.yaml", wantKey: "overnight_max_duration", wantLine: 1},
		{name: "yaml bad cron", file: "bad_cron.yaml", wantKey: "overnight_schedule", wantLine: 2},
		{name: "yaml bad timezone", file: "bad_timezone.yaml", wantKey: "timezone", wantLine: 1},
		{name: "yaml bad int", file: "bad_int.yaml", wantKey: "workers", wantLine: 1},
		{name: "yaml zero workers", file: "zero_workers.yaml", wantKey: "workers", wantLine: 1},
		{name: "yaml bad bool", file: "bad_bool.yaml", wantKey: "enabled", wantLine: 1},
		{name: "yaml bad url", file: "bad_url.yaml", wantKey: "report_webhook_url", wantLine: 1},
		{name: "yaml bad command word", file: "bad_command.yaml", wantKey: "command", wantLine: 1},
		{name: "yaml duplicate key", file: "duplicate_key.yaml", wantKey: "workers", wantLine: 2},
		{name: "yaml list value", file: "list_value.yaml", wantKey: "label", wantLine: 2},
		{name: "env negative workers", environ: []string{"SELFCODE_WORKERS=-1"}, wantKey: "SELFCODE_WORKERS"},
		{name: "env zero workers", environ: []string{"SELFCODE_WORKERS=0"}, wantKey: "SELFCODE_WORKERS"},
		{name: "env bad int", environ: []string{"SELFCODE_APP_ID=abc"}, wantKey: "SELFCODE_APP_ID"},
		{name: "env int overflow", environ: []string{"SELFCODE_WORKERS=99999999999999999999"}, wantKey: "SELFCODE_WORKERS"},
		{name: "env negative budget", environ: []string{"SELFCODE_DAILY_TOKEN_BUDGET=-5"}, wantKey: "SELFCODE_DAILY_TOKEN_BUDGET"},
		{name: "env negative cost budget", environ: []string{"SELFCODE_DAILY_COST_BUDGET=-0.5"}, wantKey: "SELFCODE_DAILY_COST_BUDGET"},
		{name: "env cost budget not a number", environ: []string{"SELFCODE_DAILY_COST_BUDGET=$5"}, wantKey: "SELFCODE_DAILY_COST_BUDGET"},
		{name: "env cost budget NaN", environ: []string{"SELFCODE_DAILY_COST_BUDGET=NaN"}, wantKey: "SELFCODE_DAILY_COST_BUDGET"},
		{name: "env cost budget without a price for a model", environ: []string{"SELFCODE_DAILY_COST_BUDGET=5", "SELFCODE_LLM_MODEL_FIXER=my-fixer"}, wantKey: "SELFCODE_DAILY_COST_BUDGET"},
		{name: "env bad prices", environ: []string{"SELFCODE_MODEL_PRICES=gpt-4.1=2;"}, wantKey: "SELFCODE_MODEL_PRICES"},
		{name: "env ci app not a slug", environ: []string{"SELFCODE_CI_APPS=github-actions,Evil App"}, wantKey: "SELFCODE_CI_APPS"},
		{name: "env ci apps empty entry", environ: []string{"SELFCODE_CI_APPS=github-actions,,buildkite"}, wantKey: "SELFCODE_CI_APPS"},
		{name: "yaml bad prices", file: "bad_prices.yaml", wantKey: "model_prices", wantLine: 1},
		{name: "env zero publish grace", environ: []string{"SELFCODE_PUBLISH_GRACE=0s"}, wantKey: "SELFCODE_PUBLISH_GRACE"},
		{name: "env bad duration", environ: []string{"SELFCODE_OVERNIGHT_MAX_DURATION=soon"}, wantKey: "SELFCODE_OVERNIGHT_MAX_DURATION"},
		{name: "env zero duration", environ: []string{"SELFCODE_SHUTDOWN_TIMEOUT=0s"}, wantKey: "SELFCODE_SHUTDOWN_TIMEOUT"},
		{name: "env bad cron", environ: []string{"SELFCODE_OVERNIGHT_SCHEDULE=* * *"}, wantKey: "SELFCODE_OVERNIGHT_SCHEDULE"},
		{name: "env cron with zone", environ: []string{"SELFCODE_OVERNIGHT_SCHEDULE=CRON_TZ=UTC 0 2 * * *"}, wantKey: "SELFCODE_OVERNIGHT_SCHEDULE"},
		{name: "env bad timezone", environ: []string{"SELFCODE_TIMEZONE=Nowhere/City"}, wantKey: "SELFCODE_TIMEZONE"},
		{name: "env bad bool", environ: []string{"SELFCODE_ENABLED=maybe"}, wantKey: "SELFCODE_ENABLED"},
		{name: "env ftp url", environ: []string{"SELFCODE_GITHUB_API_URL=ftp://example.com/"}, wantKey: "SELFCODE_GITHUB_API_URL"},
		{name: "env relative url", environ: []string{"SELFCODE_LLM_BASE_URL=/v1"}, wantKey: "SELFCODE_LLM_BASE_URL"},
		{name: "env bad report url", environ: []string{"SELFCODE_REPORT_WEBHOOK_URL=http://"}, wantKey: "SELFCODE_REPORT_WEBHOOK_URL"},
		{name: "env command with space", environ: []string{"SELFCODE_COMMAND=/self code"}, wantKey: "SELFCODE_COMMAND"},
		{name: "env bad addr", environ: []string{"SELFCODE_ADDR=8080"}, wantKey: "SELFCODE_ADDR"},
		{name: "env bad port", environ: []string{"SELFCODE_ADMIN_ADDR=127.0.0.1:http"}, wantKey: "SELFCODE_ADMIN_ADDR"},
		{name: "env bad log level", environ: []string{"SELFCODE_LOG_LEVEL=loud"}, wantKey: "SELFCODE_LOG_LEVEL"},
		{name: "env bad value over good yaml", file: "partial.yaml", environ: []string{"SELFCODE_WORKERS=x"}, wantKey: "SELFCODE_WORKERS"},
		{name: "both private keys", environ: []string{"SELFCODE_PRIVATE_KEY=x", "SELFCODE_PRIVATE_KEY_PATH=/k.pem"}, wantKey: "SELFCODE_PRIVATE_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := LoadOptions{Environ: tt.environ}
			if tt.file != "" {
				opts.File = filepath.Join("testdata", tt.file)
			}
			c, err := Load(opts)
			if err == nil {
				t.Fatalf("Load succeeded: %v", c)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %q is not a *FieldError", err)
			}
			if fe.Key != tt.wantKey || fe.Line != tt.wantLine {
				t.Errorf("key, line = %q, %d; want %q, %d (%v)", fe.Key, fe.Line, tt.wantKey, tt.wantLine, err)
			}
			if !strings.Contains(err.Error(), tt.wantKey) {
				t.Errorf("error %q does not name %s", err, tt.wantKey)
			}
			if tt.wantLine > 0 && !strings.Contains(err.Error(), fmt.Sprintf("line %d", tt.wantLine)) {
				t.Errorf("error %q does not name line %d", err, tt.wantLine)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q is not %v", err, tt.wantIs)
			}
		})
	}
}

// TestCostBudgetNeedsPrices: a daily cost budget is accepted when every
// role's model has a price, default or configured, and the error for one
// without names the model, its role and where to add the price.
func TestCostBudgetNeedsPrices(t *testing.T) {
	if _, err := Load(LoadOptions{Environ: []string{"SELFCODE_DAILY_COST_BUDGET=5"}}); err != nil {
		t.Fatalf("the default model has a default price: %v", err)
	}
	env := []string{"SELFCODE_DAILY_COST_BUDGET=5", "SELFCODE_LLM_MODEL_FIXER=my-fixer"}
	_, err := Load(LoadOptions{Environ: env})
	if err == nil || !strings.Contains(err.Error(), `"my-fixer"`) || !strings.Contains(err.Error(), "fixer role") || !strings.Contains(err.Error(), "SELFCODE_MODEL_PRICES") {
		t.Fatalf("error %v", err)
	}
	c, err := Load(LoadOptions{Environ: append(env, "SELFCODE_MODEL_PRICES=my-fixer=1,0.5,2")})
	if err != nil {
		t.Fatalf("with the price: %v", err)
	}
	if c.DailyCostBudget != 5 || !c.Prices().Has("my-fixer") || !c.Prices().Has("gpt-4.1") {
		t.Fatalf("budget %v, prices %v", c.DailyCostBudget, c.Prices())
	}
}

func TestInvalidFile(t *testing.T) {
	tests := []struct {
		file string
		want string // substring of the error
	}{
		{"not_mapping.yaml", "line 1: the top level must be a mapping"},
		{"two_documents.yaml", "line 2: only one YAML document"},
		{"syntax_error.yaml", "line 1"},
		{"does_not_exist.yaml", "read config file"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(LoadOptions{File: filepath.Join("testdata", tt.file)})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.file) {
				t.Errorf("error %q; want it to contain %q and the file name", err, tt.want)
			}
		})
	}
	_, err := Load(LoadOptions{File: "testdata/does_not_exist.yaml"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v is not fs.ErrNotExist", err)
	}
}

// fakePEM is shaped like a key for pem.Decode; it is not a usable key.
const fakePEM = "-----BEGIN RSA PRIVATE KEY-----\nc2VsZmNvZGUtdGVzdA==\n-----END RSA PRIVATE KEY-----\n"

func TestValidateServe(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, []byte(fakePEM), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		environ []string
		wantKey string // "" = no error
		wantIs  error
	}{
		{"no secret", nil, "SELFCODE_WEBHOOK_SECRET", ErrRequired},
		{"secret", []string{"SELFCODE_WEBHOOK_SECRET=s"}, "", nil},
		{"secret and key file", []string{"SELFCODE_WEBHOOK_SECRET=s", "SELFCODE_PRIVATE_KEY_PATH=" + keyFile}, "", nil},
		{"unreadable key file", []string{"SELFCODE_WEBHOOK_SECRET=s", "SELFCODE_PRIVATE_KEY_PATH=" + filepath.Join(dir, "missing.pem")}, "SELFCODE_PRIVATE_KEY_PATH", fs.ErrNotExist},
		{"key not PEM", []string{"SELFCODE_WEBHOOK_SECRET=s", "SELFCODE_PRIVATE_KEY=not-a-pem-key"}, "SELFCODE_PRIVATE_KEY", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(LoadOptions{Environ: tt.environ})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			err = c.ValidateServe()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("ValidateServe: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Key != tt.wantKey {
				t.Fatalf("ValidateServe = %v, want a FieldError for %s", err, tt.wantKey)
			}
			if !strings.Contains(err.Error(), tt.wantKey) {
				t.Errorf("error %q does not name %s", err, tt.wantKey)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q is not %v", err, tt.wantIs)
			}
			if strings.Contains(err.Error(), "not-a-pem-key") {
				t.Errorf("error %q reveals the key", err)
			}
		})
	}
}

func TestPrivateKeyPEM(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, []byte(fakePEM), 0o600); err != nil {
		t.Fatal(err)
	}
	escaped := strings.ReplaceAll(fakePEM, "\n", `\n`)
	tests := []struct {
		name   string
		cfg    Config
		want   string
		wantIs error
	}{
		{"text", Config{PrivateKey: fakePEM}, fakePEM, nil},
		{"escaped newlines", Config{PrivateKey: escaped}, fakePEM, nil},
		{"file", Config{PrivateKeyPath: keyFile}, fakePEM, nil},
		{"none", Config{}, "", ErrNoPrivateKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.PrivateKeyPEM()
			if tt.wantIs != nil {
				if !errors.Is(err, tt.wantIs) {
					t.Fatalf("err = %v, want %v", err, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("PEM = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestModelFor(t *testing.T) {
	c := &Config{LLMModel: "base", LLMModelPlanner: "p", LLMModelFixer: "f"}
	tests := []struct{ role, want string }{
		{"planner", "p"},
		{"Planner", "p"},
		{"editor", "base"},
		{"fixer", "f"},
		{"reporter", "base"},
		{"somethingelse", "base"},
	}
	for _, tt := range tests {
		if got := c.ModelFor(tt.role); got != tt.want {
			t.Errorf("ModelFor(%q) = %q, want %q", tt.role, got, tt.want)
		}
	}
}

func TestHelpersWithoutLoad(t *testing.T) {
	c := &Config{Timezone: "Asia/Tokyo", OvernightSchedule: "0 3 * * *"}
	if c.Location().String() != "Asia/Tokyo" {
		t.Errorf("Location = %v", c.Location())
	}
	from := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)  // 09:00 in Tokyo
	want := time.Date(2025, 6, 1, 18, 0, 0, 0, time.UTC) // 03:00 next day in Tokyo
	if got := c.Schedule().Next(from); !got.Equal(want) {
		t.Errorf("Next = %v, want %v", got, want)
	}
	bad := &Config{Timezone: "nope", OvernightSchedule: "nope"}
	if bad.Location() != time.UTC || bad.Schedule() != nil {
		t.Errorf("invalid literal: Location=%v Schedule=%v", bad.Location(), bad.Schedule())
	}
}

func TestFieldsTable(t *testing.T) {
	fs := Fields()
	exported := 0
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		if typ.Field(i).IsExported() {
			exported++
		}
	}
	if len(fs) != exported {
		t.Errorf("Fields() has %d entries, Config has %d exported fields", len(fs), exported)
	}
	seen := map[string]bool{}
	var secrets []string
	for _, f := range fs {
		if !strings.HasPrefix(f.Env, "SELFCODE_") {
			t.Errorf("%s: env %q lacks the SELFCODE_ prefix", f.Name, f.Env)
		}
		if want := strings.ToLower(strings.TrimPrefix(f.Env, "SELFCODE_")); f.YAML != want {
			t.Errorf("%s: yaml key %q, want %q", f.Name, f.YAML, want)
		}
		if f.Desc == "" {
			t.Errorf("%s: no desc tag", f.Name)
		}
		if seen[f.Env] {
			t.Errorf("%s: duplicate env %s", f.Name, f.Env)
		}
		seen[f.Env] = true
		if f.Secret {
			secrets = append(secrets, f.Name)
		}
	}
	if want := []string{"WebhookSecret", "PrivateKey", "LLMAPIKey"}; !reflect.DeepEqual(secrets, want) {
		t.Errorf("secret fields = %v, want %v", secrets, want)
	}
}

func TestRedaction(t *testing.T) {
	secrets := []string{"whsec-TOPSECRET-1", "-----BEGIN KEY-----TOPSECRET-2", "sk-TOPSECRET-3"}
	c, err := Load(LoadOptions{Environ: []string{
		"SELFCODE_WEBHOOK_SECRET=" + secrets[0],
		"SELFCODE_PRIVATE_KEY=" + secrets[1],
		"SELFCODE_LLM_API_KEY=" + secrets[2],
	}})
	if err != nil {
		t.Fatal(err)
	}
	renders := map[string]func() string{
		"%v pointer":  func() string { return fmt.Sprintf("%v", c) },
		"%v value":    func() string { return fmt.Sprintf("%v", *c) },
		"%+v pointer": func() string { return fmt.Sprintf("%+v", c) },
		"%+v value":   func() string { return fmt.Sprintf("%+v", *c) },
		"%#v value":   func() string { return fmt.Sprintf("%#v", *c) },
		"%s value":    func() string { return fmt.Sprintf("%s", *c) },
		"%d value":    func() string { return fmt.Sprintf("%d", *c) },
		"%x value":    func() string { return fmt.Sprintf("%x", *c) },
		"%q value":    func() string { return fmt.Sprintf("%q", *c) },
		"in a struct": func() string { return fmt.Sprintf("%+v", struct{ C Config }{*c}) },
		"Sprint":      func() string { return fmt.Sprint(c, *c) },
		"json pointer": func() string {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		},
		"json value in struct": func() string {
			b, err := json.Marshal(struct{ C Config }{*c})
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		},
		"slog json": func() string {
			var buf bytes.Buffer
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("start", "config", c, "value", *c)
			return buf.String()
		},
		"slog text": func() string {
			var buf bytes.Buffer
			slog.New(slog.NewTextHandler(&buf, nil)).Info("start", slog.Any("config", c))
			return buf.String()
		},
	}
	for name, render := range renders {
		t.Run(name, func(t *testing.T) {
			out := render()
			if strings.Contains(out, "TOPSECRET") { // a part of every secret
				t.Fatalf("output reveals a secret: %s", out)
			}
			if !strings.Contains(out, redactedMark) {
				t.Errorf("output lacks %s: %s", redactedMark, out)
			}
			if !strings.Contains(out, "127.0.0.1:9090") {
				t.Errorf("output lacks a plain setting: %s", out)
			}
		})
	}

	r := Default().Redacted()
	if len(r) != len(Fields()) {
		t.Errorf("Redacted has %d keys, want %d", len(r), len(Fields()))
	}
	if r["webhook_secret"] != "" {
		t.Errorf("an empty secret renders as %q, want empty", r["webhook_secret"])
	}
	if r["overnight_max_duration"] != "45m0s" || r["workers"] != 2 {
		t.Errorf("Redacted values: %v", r)
	}
	var round map[string]any
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &round); err != nil || round["llm_api_key"] != redactedMark {
		t.Errorf("json round trip: %v, %v", round, err)
	}
}

func FuzzLoadYAML(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a: &a [*a, *a]\nworkers: *a\n"))
	f.Add([]byte("? [a, b]\n: c\n"))
	f.Add([]byte("<<: {workers: 3}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := load(data, "fuzz.yaml", nil)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if c.Workers < 1 || c.OvernightMaxDuration <= 0 || c.Schedule() == nil || c.Location() == nil || c.Command == "" {
			t.Fatalf("invalid config accepted: %v", c)
		}
		again, err := load(data, "fuzz.yaml", nil)
		if err != nil || again.String() != c.String() {
			t.Fatalf("not deterministic: %v", err)
		}
		_, _ = json.Marshal(c)
	})
}
