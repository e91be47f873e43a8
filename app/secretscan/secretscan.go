package secretscan

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// Finding is one credential-looking value a change adds. It never carries
// the value.
type Finding struct {
	File        string `json:"file"`
	Line        int    `json:"line"` // in the changed file, from 1
	Rule        string `json:"rule"` // gitleaks rule id, e.g. "github-pat"
	Description string `json:"description"`
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d (%s)", f.File, f.Line, f.Rule) }

// Redacted replaces each flagged value in a diff.
const Redacted = "[REDACTED]"

// Scanner scans diffs; build it once (compiling the rules takes a while)
// and share it. It is safe for concurrent use.
type Scanner struct {
	mu sync.Mutex // the detector is not documented as safe for concurrent use
	d  *detect.Detector
}

// quiet silences gitleaks' own logger once: its debug lines carry the
// values it finds, and nothing of it belongs in selfcode's logs.
var quiet sync.Once

// New compiles gitleaks' default rules. Inline "gitleaks:allow" comments
// are not honoured: the text being scanned is written by a model that may
// have been told to add them.
func New() (*Scanner, error) {
	quiet.Do(func() { logging.Logger = zerolog.Nop() })
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("read gitleaks' rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("read gitleaks' rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("compile gitleaks' rules: %w", err)
	}
	d := detect.NewDetector(cfg)
	d.IgnoreGitleaksAllow = true
	d.MaxDecodeDepth = 2 // also base64/hex/percent-encoded values
	return &Scanner{d: d}, nil
}

// Scan finds credentials in the lines a unified diff (git diff) adds, and
// returns them sorted by file and line, with the diff whose flagged values
// are replaced by Redacted.
func (s *Scanner) Scan(ctx context.Context, diff string) ([]Finding, string) {
	var out []Finding
	var secrets []string
	for _, f := range addedLines(diff) {
		raw := strings.Join(f.text, "\n")
		s.mu.Lock()
		//lint:ignore SA1019 detect.Fragment is the type DetectContext takes until gitleaks v9.
		hits := s.d.DetectContext(ctx, detect.Fragment{Raw: raw, FilePath: f.path})
		s.mu.Unlock()
		for _, hit := range hits {
			line := 0
			if hit.StartLine >= 0 && hit.StartLine < len(f.lines) {
				line = f.lines[hit.StartLine]
			}
			out = append(out, Finding{File: f.path, Line: line, Rule: hit.RuleID, Description: hit.Description})
			if hit.Secret != "" {
				secrets = append(secrets, hit.Secret)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, redact(diff, secrets)
}

// redact replaces every value, longest first (a key block holds lines
// that are values of their own), with Redacted; a multi-line value is
// replaced line by line, as a diff has it with "+" before each.
func redact(diff string, secrets []string) string {
	var parts []string
	for _, s := range secrets {
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); len(l) >= 8 {
				parts = append(parts, l)
			}
		}
	}
	sort.Slice(parts, func(i, j int) bool { return len(parts[i]) > len(parts[j]) })
	for _, p := range parts {
		diff = strings.ReplaceAll(diff, p, Redacted)
	}
	return diff
}

// fileLines are the lines a diff adds to one file, with their line numbers.
type fileLines struct {
	path  string
	text  []string
	lines []int
}

// addedLines reads the added lines of each file of a unified diff (as git
// diff prints it; deleted files and binary files add none).
func addedLines(diff string) []fileLines {
	var out []fileLines
	var cur *fileLines
	header := false // between "diff --git" and the first hunk
	next := 0       // the new file's line number of the next added or context line
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			cur, header = nil, true
		case header && strings.HasPrefix(l, "+++ "):
			if p := diffPath(strings.TrimPrefix(l, "+++ ")); p != "" {
				out = append(out, fileLines{path: p})
				cur = &out[len(out)-1]
			}
		case strings.HasPrefix(l, "@@ "):
			header, next = false, hunkStart(l)
		case header || cur == nil:
		case strings.HasPrefix(l, "+"):
			cur.text = append(cur.text, l[1:])
			cur.lines = append(cur.lines, next)
			next++
		case strings.HasPrefix(l, " "):
			next++
		}
	}
	return out
}

// diffPath is the path on a "+++ " line: "b/x" (or "x" without prefixes),
// C-quoted when git quoted it; "" for /dev/null.
func diffPath(s string) string {
	s = strings.TrimRight(s, "\t\r")
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	return strings.TrimPrefix(s, "b/")
}

// hunkStart reads the new file's first line from "@@ -a,b +c,d @@".
func hunkStart(l string) int {
	f := strings.Fields(l)
	if len(f) < 3 || !strings.HasPrefix(f[2], "+") {
		return 0
	}
	n, _, _ := strings.Cut(strings.TrimPrefix(f[2], "+"), ",")
	v, err := strconv.Atoi(n)
	if err != nil {
		return 0
	}
	return v
}
