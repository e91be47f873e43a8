package config

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/selfcode/selfcode/app/pricing"
)

// Error kinds a caller can branch on with errors.Is.
var (
	// ErrUnknownKey: the config file names a key Config does not have.
	ErrUnknownKey = errors.New("unknown key")
	// ErrRequired: a setting the command needs is empty.
	ErrRequired = errors.New("required")
	// ErrNoPrivateKey: neither SELFCODE_PRIVATE_KEY nor SELFCODE_PRIVATE_KEY_PATH is set.
	ErrNoPrivateKey = errors.New("no GitHub App private key configured (SELFCODE_PRIVATE_KEY or SELFCODE_PRIVATE_KEY_PATH)")
)

// FieldError is a problem with one setting. Key is the environment variable
// when the value came from the environment, or the YAML key (with File and
// Line) when it came from the config file. It never holds a secret's value.
type FieldError struct {
	Key  string
	File string // config file; empty when the value came from elsewhere
	Line int    // 1-based line in File; 0 when unknown
	Err  error
}

func (e *FieldError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("config file %s line %d: %s: %v", e.File, e.Line, e.Key, e.Err)
	}
	return fmt.Sprintf("config %s: %v", e.Key, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// LoadOptions says where Load reads from. Nothing is read from the process
// itself: pass os.Environ() as Environ to use the real environment.
type LoadOptions struct {
	// File is the --config YAML file; empty for none.
	File string
	// Environ holds "KEY=value" entries, as os.Environ returns them. The
	// first entry for a key wins; an empty value counts as unset.
	Environ []string
}

// Load builds the configuration: struct-tag defaults, then the YAML file,
// then the environment. Every value is validated; the first problem is
// returned as a *FieldError naming its key.
//
// SELFCODE_LLM_API_KEY defaults to OPENAI_API_KEY, so either the file's
// llm_api_key or SELFCODE_LLM_API_KEY overrides that fallback. A YAML key
// whose value is null (`key:` or `key: ~`) leaves the setting unchanged.
func Load(opts LoadOptions) (*Config, error) {
	var data []byte
	if opts.File != "" {
		b, err := os.ReadFile(opts.File)
		if err != nil {
			return nil, fmt.Errorf("read config file: %w", err)
		}
		data = b
	}
	return load(data, opts.File, opts.Environ)
}

// Default returns the configuration built from the defaults alone, as Load
// with no file and an empty environment does.
func Default() *Config {
	c, err := load(nil, "", nil)
	if err != nil {
		// The defaults are constants in the struct tags, covered by tests.
		panic(fmt.Sprintf("config: invalid default: %v", err))
	}
	return c
}

func load(data []byte, file string, environ []string) (*Config, error) {
	fs := fields()
	env := envMap(environ)
	c := &Config{}
	for _, f := range fs {
		if f.Default == "" {
			continue
		}
		if err := f.set(c, f.Default); err != nil {
			return nil, &FieldError{Key: f.Env, Err: fmt.Errorf("default: %w", err)}
		}
	}
	if k := env["OPENAI_API_KEY"]; k != "" {
		c.LLMAPIKey = k
	}
	if file == "" {
		file = "(config)"
	}
	if err := applyYAML(c, fs, data, file); err != nil {
		return nil, err
	}
	for _, f := range fs {
		if v := env[f.Env]; v != "" {
			if err := f.set(c, v); err != nil {
				return nil, &FieldError{Key: f.Env, Err: err}
			}
		}
	}
	if c.PrivateKey != "" && c.PrivateKeyPath != "" {
		return nil, &FieldError{Key: "SELFCODE_PRIVATE_KEY", Err: errors.New("both SELFCODE_PRIVATE_KEY (private_key) and SELFCODE_PRIVATE_KEY_PATH (private_key_path) are set; set one")}
	}
	if err := c.derive(); err != nil {
		return nil, err
	}
	if err := c.checkCostBudget(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkCostBudget: a daily cost budget needs every configured model's
// price, or it could not be kept.
func (c *Config) checkCostBudget() error {
	if c.DailyCostBudget <= 0 {
		return nil
	}
	prices := c.Prices()
	for _, r := range []string{"planner", "editor", "fixer", "reporter"} {
		if m := c.ModelFor(r); !prices.Has(m) {
			return &FieldError{Key: "SELFCODE_DAILY_COST_BUDGET", Err: fmt.Errorf(
				"needs the price of model %q (the %s role's), which has no default: add it to SELFCODE_MODEL_PRICES (model_prices) as %s=INPUT,CACHED_INPUT,OUTPUT dollars per million tokens", m, r, m)}
		}
	}
	return nil
}

// Prices is the price table: the defaults with SELFCODE_MODEL_PRICES on
// top (validated by Load; for a Config not made by Load, an invalid list
// counts as empty).
func (c *Config) Prices() *pricing.Table {
	over, err := pricing.Parse(c.ModelPrices)
	if err != nil {
		over = nil
	}
	return pricing.New(over)
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return m
}

// applyYAML walks the document's top-level mapping so that each error can
// carry the key and its line. Unknown keys and duplicate keys are errors.
func applyYAML(c *Config, fs []field, data []byte, file string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	byKey := make(map[string]field, len(fs))
	for _, f := range fs {
		byKey[f.YAML] = f
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("config file %s: %w", file, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return fmt.Errorf("config file %s line %d: only one YAML document is allowed", file, extra.Line)
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("config file %s: %w", file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s line %d: the top level must be a mapping of keys to values", file, root.Line)
	}
	seen := make(map[string]int, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("config file %s line %d: keys must be plain names", file, k.Line)
		}
		f, ok := byKey[k.Value]
		if !ok || k.Value == "" {
			return &FieldError{Key: k.Value, File: file, Line: k.Line, Err: ErrUnknownKey}
		}
		if prev, dup := seen[k.Value]; dup {
			return &FieldError{Key: k.Value, File: file, Line: k.Line, Err: fmt.Errorf("already set on line %d", prev)}
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if v.Kind != yaml.ScalarNode {
			return &FieldError{Key: k.Value, File: file, Line: v.Line, Err: errors.New("must be a single value, not a list or mapping")}
		}
		if v.Tag == "!!null" {
			continue
		}
		if err := f.set(c, v.Value); err != nil {
			return &FieldError{Key: k.Value, File: file, Line: v.Line, Err: err}
		}
	}
	return nil
}

// derive computes the unexported fields from the validated settings.
func (c *Config) derive() error {
	loc, err := loadLocation(c.Timezone)
	if err != nil {
		return &FieldError{Key: "SELFCODE_TIMEZONE", Err: err}
	}
	sched, err := parseSchedule(c.OvernightSchedule)
	if err != nil {
		return &FieldError{Key: "SELFCODE_OVERNIGHT_SCHEDULE", Err: err}
	}
	if s, ok := sched.(*cron.SpecSchedule); ok {
		s.Location = loc
	}
	c.loc, c.schedule = loc, sched
	return nil
}

// ValidateServe reports what `selfcode serve` needs beyond a valid
// configuration: a webhook secret, and a readable private key when one is
// configured.
func (c *Config) ValidateServe() error {
	if c.WebhookSecret == "" {
		return &FieldError{Key: "SELFCODE_WEBHOOK_SECRET", Err: fmt.Errorf("%w by serve (webhook_secret in the config file)", ErrRequired)}
	}
	if c.PrivateKey != "" || c.PrivateKeyPath != "" {
		if _, err := c.PrivateKeyPEM(); err != nil {
			return err
		}
	}
	return nil
}

// HasAppCredentials reports whether the GitHub App is configured: an App id
// and a private key (its text or a path).
func (c *Config) HasAppCredentials() bool {
	return c.AppID != 0 && (c.PrivateKey != "" || c.PrivateKeyPath != "")
}

// PrivateKeyPEM returns the GitHub App private key: SELFCODE_PRIVATE_KEY's
// text (a literal `\n` stands for a newline when the text has none), or the
// contents of SELFCODE_PRIVATE_KEY_PATH. It checks that the result is PEM;
// errors never include the key.
func (c *Config) PrivateKeyPEM() ([]byte, error) {
	var key []byte
	var from string
	switch {
	case c.PrivateKey != "":
		from = "SELFCODE_PRIVATE_KEY"
		k := c.PrivateKey
		if !strings.Contains(k, "\n") {
			k = strings.ReplaceAll(k, `\n`, "\n")
		}
		key = []byte(k)
	case c.PrivateKeyPath != "":
		from = "SELFCODE_PRIVATE_KEY_PATH"
		b, err := os.ReadFile(c.PrivateKeyPath)
		if err != nil {
			return nil, &FieldError{Key: from, Err: fmt.Errorf("read private key: %w", err)}
		}
		key = b
	default:
		return nil, ErrNoPrivateKey
	}
	if block, _ := pem.Decode(key); block == nil {
		return nil, &FieldError{Key: from, Err: errors.New("private key is not PEM text")}
	}
	return key, nil
}

// Location is the zone of the overnight schedule. For a Config not made by
// Load it is resolved from Timezone, falling back to UTC.
func (c *Config) Location() *time.Location {
	if c.loc != nil {
		return c.loc
	}
	if loc, err := loadLocation(c.Timezone); err == nil {
		return loc
	}
	return time.UTC
}

// Schedule is the parsed overnight schedule; its Next times are computed in
// Location(). For a Config not made by Load it is parsed from
// OvernightSchedule, and nil when that is invalid.
func (c *Config) Schedule() cron.Schedule {
	if c.schedule != nil {
		return c.schedule
	}
	sched, err := parseSchedule(c.OvernightSchedule)
	if err != nil {
		return nil
	}
	if s, ok := sched.(*cron.SpecSchedule); ok {
		s.Location = c.Location()
	}
	return sched
}

// ModelFor returns the model for a role (planner, editor, fixer, reporter):
// the role's override when set, else LLMModel.
func (c *Config) ModelFor(role string) string {
	var m string
	switch strings.ToLower(role) {
	case "planner":
		m = c.LLMModelPlanner
	case "editor":
		m = c.LLMModelEditor
	case "fixer":
		m = c.LLMModelFixer
	case "reporter":
		m = c.LLMModelReporter
	}
	if m == "" {
		return c.LLMModel
	}
	return m
}

// CIAppSlugs are the apps of CIApps, whose failing checks selfcode acts
// on (never nil: empty means none).
func (c *Config) CIAppSlugs() []string {
	slugs, _ := ParseSlugs(c.CIApps) // checked by Load
	return slugs
}

// SlogLevel is LogLevel as a slog.Level (info when LogLevel is invalid).
func (c *Config) SlogLevel() slog.Level {
	l, err := parseLevel(c.LogLevel)
	if err != nil {
		return slog.LevelInfo
	}
	return l
}
