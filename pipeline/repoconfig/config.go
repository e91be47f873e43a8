package repoconfig

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// FileName is the repository configuration file, read from the checkout root.
const FileName = ".selfcode.yml"

// MaxInstructions is the longest instructions text accepted, in bytes; the
// text goes into every prompt.
const MaxInstructions = 16 * 1024

// Config is a repository's .selfcode.yml with defaults applied.
type Config struct {
	// Image is the sandbox image; empty means the server default
	// (SELFCODE_SANDBOX_IMAGE).
	Image string `yaml:"image" json:"image"`
	// Setup commands run once after checkout, before any verify command.
	Setup []string `yaml:"setup" json:"setup"`
	// SetupNetwork lets setup commands use the network; verify never may.
	SetupNetwork bool `yaml:"setup_network" json:"setup_network"`
	// Verify commands as configured; see VerifyCommands for the effective list.
	Verify []Command `yaml:"verify" json:"verify"`
	// Reports are doublestar globs, relative to the checkout, of test
	// result files (JUnit XML, jest or mocha JSON) that verify commands
	// write; they are read after each command and name its tests.
	Reports []string `yaml:"reports" json:"reports"`
	// Paths is the model's path policy.
	Paths Paths `yaml:"paths" json:"paths"`
	// Limits bound a job.
	Limits Limits `yaml:"limits" json:"limits"`
	// Enabled false makes jobs for the repository end canceled with a reply.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// DraftOnFailure opens a draft pull request when verification fails.
	DraftOnFailure bool `yaml:"draft_on_failure" json:"draft_on_failure"`
	// Instructions is repository knowledge handed to the model.
	Instructions string `yaml:"instructions" json:"instructions"`
	// Smoke, when set, builds the repository's image and probes a shadow
	// container of it after the verify commands (smoke.go).
	Smoke *Smoke `yaml:"smoke" json:"smoke,omitempty"`
}

// Command is one verify command.
type Command struct {
	Name string `yaml:"name" json:"name"`
	Run  string `yaml:"run" json:"run"`
	// Timeout is the command's own limit; zero means Limits.CommandTimeout
	// (VerifyCommands fills it in).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Inferred is true when the command was guessed from the tree rather
	// than configured.
	Inferred bool `yaml:"-" json:"inferred,omitempty"`
	// Kind says what the command proves: a build (the code compiles,
	// type-checks, imports) or a test run. Configured commands get it
	// from GuessKind.
	Kind Kind `yaml:"-" json:"kind,omitempty"`
	// Runner names the test runner whose output the command prints or
	// whose report it writes (RunnerGo, RunnerPytest, …), when known.
	Runner Runner `yaml:"-" json:"runner,omitempty"`
	// Reports are extra report files this command writes (absolute
	// sandbox paths or globs relative to the checkout).
	Reports []string `yaml:"-" json:"reports,omitempty"`
}

// SetupStep is one setup command.
type SetupStep struct {
	Name string `json:"name"`
	Run  string `json:"run"`
	// Network lets the step reach the network (only setup ever may).
	Network bool          `json:"network"`
	Timeout time.Duration `json:"timeout"`
	// Inferred is true when the step was guessed from the tree.
	Inferred bool `json:"inferred,omitempty"`
}

// Paths are doublestar globs relative to the checkout root.
type Paths struct {
	// Allow lists what the model may touch; default ["**"].
	Allow []string `yaml:"allow" json:"allow"`
	// Deny is never read or written by the model.
	Deny []string `yaml:"deny" json:"deny"`
	// Protected may be edited but never deleted.
	Protected []string `yaml:"protected" json:"protected"`
	// GitHubOptIn lists paths under .github/ the model may read and
	// change after all (everything there is off-limits by default: it is
	// what CI runs with the repository's secrets). Each entry names a file
	// or folder directly under .github/ literally (CheckGitHubOptIn);
	// workflows and actions can never be opted in.
	GitHubOptIn []string `yaml:"github_opt_in" json:"github_opt_in,omitempty"`
}

// Limits bound one job.
type Limits struct {
	MaxFiles       int `yaml:"max_files" json:"max_files"`
	MaxFixAttempts int `yaml:"max_fix_attempts" json:"max_fix_attempts"`
	// CIFixAttempts bounds the follow-ups selfcode starts on its own pull
	// request when another check (the repository's CI) fails there.
	CIFixAttempts  int           `yaml:"ci_fix_attempts" json:"ci_fix_attempts"`
	MaxSteps       int           `yaml:"max_steps" json:"max_steps"`
	MaxTokens      int           `yaml:"max_tokens" json:"max_tokens"`
	JobTimeout     time.Duration `yaml:"job_timeout" json:"job_timeout"`
	CommandTimeout time.Duration `yaml:"command_timeout" json:"command_timeout"`
	BlastRadius    int           `yaml:"blast_radius" json:"blast_radius"`
	// OutputBytes is the output kept per command (its head and tail). It
	// never turns a pass into a failure: a longer output is cut in the
	// middle and the command goes on.
	OutputBytes int64 `yaml:"output_bytes" json:"output_bytes"`
}

// Output bounds.
const (
	DefaultOutputBytes = 4 << 20
	MinOutputBytes     = 4 << 10
)

// Default returns the configuration used when the file is absent; every
// key left out of a file takes its value from here.
func Default() *Config {
	return &Config{
		SetupNetwork: true,
		Paths:        Paths{Allow: []string{"**"}},
		Limits: Limits{
			MaxFiles:       10,
			MaxFixAttempts: 3,
			CIFixAttempts:  2,
			MaxSteps:       40,
			MaxTokens:      400000,
			JobTimeout:     45 * time.Minute,
			CommandTimeout: 10 * time.Minute,
			BlastRadius:    5,
			OutputBytes:    DefaultOutputBytes,
		},
		Enabled:        true,
		DraftOnFailure: true,
	}
}

// Hash is a stable digest of what the file declares that affects
// verification: image, setup commands and their network access, verify
// commands and their timeouts, report globs, the smoke stage. Commands
// inferred from the tree are not part of it: they depend on this version
// of the inference as much as on the tree, so the baseline cache's key
// adds the setup steps and verify commands as resolved for the checkout
// (the pipeline's baselineHash).
func (c *Config) Hash() string {
	h := sha256.New()
	str := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	num := func(v int64) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	str("selfcode-verify-v2")
	str(c.Image)
	num(int64(len(c.Setup)))
	for _, s := range c.Setup {
		str(s)
	}
	if c.SetupNetwork {
		num(1)
	} else {
		num(0)
	}
	num(int64(c.Limits.CommandTimeout))
	num(int64(len(c.Verify)))
	for _, v := range c.Verify {
		to := v.Timeout
		if to == 0 {
			to = c.Limits.CommandTimeout
		}
		str(v.Name)
		str(v.Run)
		num(int64(to))
	}
	num(int64(len(c.Reports)))
	for _, r := range c.Reports {
		str(r)
	}
	if c.Smoke != nil {
		c.Smoke.hash(str, num)
	}
	return hex.EncodeToString(h.Sum(nil))
}
