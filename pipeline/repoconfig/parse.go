package repoconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"
)

// FieldError is one invalid or unknown key in a .selfcode.yml.
type FieldError struct {
	Key    string // dotted path, e.g. "limits.max_files" or "verify[1].run"
	Line   int    // 1-based; 0 when the problem has no position
	Column int
	Msg    string
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %s: %s", FileName, e.Line, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", FileName, e.Key, e.Msg)
}

// ValidationError lists every problem found in one file, in file order.
type ValidationError struct {
	Problems []*FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find each *FieldError.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// ErrSyntax is wrapped by Parse when the file is not YAML at all.
var ErrSyntax = errors.New("invalid YAML")

// Parse reads a .selfcode.yml. Every key is optional; keys left out take
// their value from Default. Unknown keys and invalid values are reported
// together in a *ValidationError naming key and line; a file that is not
// YAML yields an error wrapping ErrSyntax. A null value (`key:` with
// nothing after it) means the default.
func Parse(data []byte) (*Config, error) {
	c := Default()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return c, nil // empty file
		}
		return nil, fmt.Errorf("%s: %w: %v", FileName, ErrSyntax, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ValidationError{Problems: []*FieldError{{Key: "(document)", Line: extra.Line, Column: extra.Column, Msg: "the file must hold a single YAML document"}}}
	}
	p := &parser{}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return c, nil
		}
		root = root.Content[0]
	}
	p.top(resolve(root), c)
	if len(p.problems) > 0 {
		return nil, &ValidationError{Problems: p.problems}
	}
	return c, nil
}

type parser struct {
	problems []*FieldError
}

func (p *parser) fail(key string, n *yaml.Node, format string, args ...any) {
	fe := &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		fe.Line, fe.Column = n.Line, n.Column
	}
	p.problems = append(p.problems, fe)
}

// resolve follows aliases so an anchored value can be reused.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// entries checks n is a mapping and yields its key/value pairs, reporting
// duplicate and merge keys.
func (p *parser) entries(path string, n *yaml.Node, each func(key string, k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.fail(orRoot(path), n, "must be a mapping of keys to values")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.fail(orRoot(path), k, "keys must be plain strings")
			continue
		}
		full := join(path, k.Value)
		if k.Value == "<<" {
			p.fail(full, k, "merge keys are not supported")
			continue
		}
		if seen[k.Value] {
			p.fail(full, k, "duplicate key")
			continue
		}
		seen[k.Value] = true
		if v == nil {
			continue
		}
		each(k.Value, k, v)
	}
}

func (p *parser) unknown(full string, k *yaml.Node, known []string) {
	p.fail(full, k, "unknown key (known: %s)", strings.Join(known, ", "))
}

// fields walks mapping v, reporting keys not in known; each known key with a
// non-null value goes to each with its dotted path.
func (p *parser) fields(key string, v *yaml.Node, known []string, each func(f, fk string, fv *yaml.Node)) {
	p.entries(key, v, func(f string, k, fv *yaml.Node) {
		fk := join(key, f)
		if !has(known, f) {
			p.unknown(fk, k, known)
			return
		}
		if isNull(fv) {
			return
		}
		each(f, fk, fv)
	})
}

func (p *parser) top(n *yaml.Node, c *Config) {
	if isNull(n) {
		return
	}
	known := []string{"image", "setup", "setup_network", "verify", "reports", "paths", "limits", "enabled", "draft_on_failure", "instructions", "smoke"}
	p.entries("", n, func(key string, k, v *yaml.Node) {
		if isNull(v) {
			if !has(known, key) {
				p.unknown(key, k, known)
			}
			return
		}
		switch key {
		case "image":
			if s, ok := p.str(key, v); ok {
				if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t\r\n") {
					p.fail(key, v, "must be an image reference without spaces, e.g. golang:1.23-bookworm")
				} else {
					c.Image = s
				}
			}
		case "setup":
			c.Setup = p.commands(key, v)
		case "setup_network":
			if b, ok := p.boolean(key, v); ok {
				c.SetupNetwork = b
			}
		case "verify":
			c.Verify = p.verify(key, v)
		case "reports":
			c.Reports = p.globs(key, v)
		case "paths":
			p.paths(key, v, &c.Paths)
		case "limits":
			p.limits(key, v, &c.Limits)
		case "enabled":
			if b, ok := p.boolean(key, v); ok {
				c.Enabled = b
			}
		case "draft_on_failure":
			if b, ok := p.boolean(key, v); ok {
				c.DraftOnFailure = b
			}
		case "instructions":
			if s, ok := p.str(key, v); ok {
				if len(s) > MaxInstructions {
					p.fail(key, v, "is %d bytes; at most %d are allowed", len(s), MaxInstructions)
				} else {
					c.Instructions = s
				}
			}
		case "smoke":
			c.Smoke = p.smoke(key, v)
		default:
			p.unknown(key, k, known)
		}
	})
}

func (p *parser) str(key string, v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		p.fail(key, v, "must be a string, got %s", describe(v))
		return "", false
	}
	return v.Value, true
}

func (p *parser) boolean(key string, v *yaml.Node) (bool, bool) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		p.fail(key, v, "must be true or false, got %s", describe(v))
		return false, false
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		p.fail(key, v, "must be true or false: %v", err)
		return false, false
	}
	return b, true
}

// integer decodes a whole number no smaller than min.
func (p *parser) integer(key string, v *yaml.Node, min int) (int, bool) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		p.fail(key, v, "must be a whole number, got %s", describe(v))
		return 0, false
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(v.Value, "_", ""), 0, 32)
	if err != nil {
		p.fail(key, v, "must be a whole number that fits in 32 bits, got %q", v.Value)
		return 0, false
	}
	if i < int64(min) {
		if i < 0 {
			p.fail(key, v, "must not be negative, got %d", i)
		} else {
			p.fail(key, v, "must be at least %d, got %d", min, i)
		}
		return 0, false
	}
	return int(i), true
}

// duration decodes a Go duration such as 90s, 10m or 1h30m; it must be
// positive and at most a day.
func (p *parser) duration(key string, v *yaml.Node) (time.Duration, bool) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		p.fail(key, v, "must be a duration such as 90s, 10m or 1h30m, got %s", describe(v))
		return 0, false
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		p.fail(key, v, "must be a duration such as 90s, 10m or 1h30m, got %q", v.Value)
		return 0, false
	}
	if d <= 0 {
		p.fail(key, v, "must be positive, got %s", v.Value)
		return 0, false
	}
	if d > 24*time.Hour {
		p.fail(key, v, "must be at most 24h, got %s", v.Value)
		return 0, false
	}
	return d, true
}

// commands decodes a list of non-empty shell command strings.
func (p *parser) commands(key string, v *yaml.Node) []string {
	return p.list(key, v, "commands", func(s string) string {
		if strings.TrimSpace(s) == "" {
			return "must not be empty"
		}
		return ""
	})
}

// list decodes a list of strings, each checked by check (which returns
// what is wrong, or "").
func (p *parser) list(key string, v *yaml.Node, what string, check func(string) string) []string {
	if v.Kind != yaml.SequenceNode {
		p.fail(key, v, "must be a list of %s, got %s", what, describe(v))
		return nil
	}
	out := []string{}
	for i, item := range v.Content {
		item = resolve(item)
		ik := fmt.Sprintf("%s[%d]", key, i)
		s, ok := p.str(ik, item)
		if !ok {
			continue
		}
		if msg := check(s); msg != "" {
			p.fail(ik, item, "%s", msg)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) verify(key string, v *yaml.Node) []Command {
	if v.Kind != yaml.SequenceNode {
		p.fail(key, v, "must be a list of {name, run, timeout}, got %s", describe(v))
		return nil
	}
	known := []string{"name", "run", "timeout"}
	out := []Command{}
	names := map[string]bool{}
	for i, item := range v.Content {
		item = resolve(item)
		ik := fmt.Sprintf("%s[%d]", key, i)
		var cmd Command
		runSeen := false
		p.fields(ik, item, known, func(f, fk string, fv *yaml.Node) {
			switch f {
			case "name":
				if s, ok := p.str(fk, fv); ok {
					switch {
					case strings.TrimSpace(s) == "":
						p.fail(fk, fv, "must not be empty")
					case names[s]:
						p.fail(fk, fv, "duplicate verify name %q", s)
					default:
						names[s] = true
						cmd.Name = s
					}
				}
			case "run":
				runSeen = true
				if s, ok := p.str(fk, fv); ok {
					if strings.TrimSpace(s) == "" {
						p.fail(fk, fv, "must not be empty")
					} else {
						cmd.Run = s
					}
				}
			case "timeout":
				if d, ok := p.duration(fk, fv); ok {
					cmd.Timeout = d
				}
			}
		})
		if item.Kind == yaml.MappingNode && !runSeen {
			p.fail(ik, item, "needs a run command")
		}
		if cmd.Run == "" {
			continue
		}
		if cmd.Name == "" {
			cmd.Name = defaultName(cmd.Run, names)
			names[cmd.Name] = true
		}
		out = append(out, cmd)
	}
	return out
}

// defaultName names an unnamed verify command after its first word.
func defaultName(run string, taken map[string]bool) string {
	base := "verify"
	if f := strings.Fields(run); len(f) > 0 {
		base = f[0]
	}
	name := base
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

func (p *parser) paths(key string, v *yaml.Node, out *Paths) {
	p.fields(key, v, []string{"allow", "deny", "protected", "github_opt_in"}, func(f, fk string, fv *yaml.Node) {
		if f == "github_opt_in" {
			out.GitHubOptIn = p.list(fk, fv, "paths under .github/", CheckGitHubOptIn)
			return
		}
		globs := p.globs(fk, fv)
		switch f {
		case "allow":
			out.Allow = globs
		case "deny":
			out.Deny = globs
		case "protected":
			out.Protected = globs
		}
	})
}

// GitHubNever are the folders under .github/ that no configuration opens
// to the model: GitHub Actions runs what is in them with the
// repository's secrets.
var GitHubNever = []string{"workflows", "actions"}

// CheckGitHubOptIn says what is wrong with an entry of
// paths.github_opt_in, or "" when it is usable: a glob (CheckGlob) that
// starts with ".github/" and whose next part names a file or folder
// literally — no wildcard, so that no entry can reach more of .github
// than it names — and is not one of GitHubNever, in any case. Globs may
// follow below that part: ".github/ISSUE_TEMPLATE/**" or
// ".github/CODEOWNERS", never ".github/**", ".github/*.md" or
// ".github/workflows/ci.yml".
func CheckGitHubOptIn(g string) string {
	if msg := CheckGlob(g); msg != "" {
		return msg
	}
	rest, ok := strings.CutPrefix(g, ".github/")
	if !ok {
		return fmt.Sprintf("%q must start with .github/ (everything else is governed by allow, deny and protected)", g)
	}
	part, _, _ := strings.Cut(rest, "/")
	switch {
	case part == "" || strings.ContainsAny(part, `*?[]{}\!`):
		return fmt.Sprintf("%q must name a file or folder directly under .github/ without wildcards (e.g. .github/ISSUE_TEMPLATE/**), so that it cannot open more of .github than it names", g)
	}
	for _, never := range GitHubNever {
		if strings.EqualFold(part, never) {
			return fmt.Sprintf("%q: .github/%s can never be opened to the model (GitHub Actions runs it with the repository's secrets)", g, never)
		}
	}
	return ""
}

func (p *parser) globs(key string, v *yaml.Node) []string {
	return p.list(key, v, "globs", CheckGlob)
}

// CheckGlob says what is wrong with a path glob, or "" when it is usable:
// valid doublestar syntax, relative, slash-separated, no "..".
func CheckGlob(g string) string {
	switch {
	case strings.TrimSpace(g) == "":
		return "must not be empty"
	case !doublestar.ValidatePattern(g):
		return fmt.Sprintf("invalid glob %q", g)
	case strings.HasPrefix(g, "/"):
		return fmt.Sprintf("glob %q must be relative to the repository root (no leading /)", g)
	case strings.Contains(g, `\`):
		return fmt.Sprintf("glob %q must use / as separator and no escapes", g)
	}
	for _, part := range strings.Split(g, "/") {
		if part == ".." {
			return fmt.Sprintf("glob %q must not contain ..", g)
		}
	}
	return ""
}

func (p *parser) limits(key string, v *yaml.Node, l *Limits) {
	known := []string{"max_files", "max_fix_attempts", "ci_fix_attempts", "max_steps", "max_tokens", "job_timeout", "command_timeout", "blast_radius", "output_bytes"}
	p.fields(key, v, known, func(f, fk string, fv *yaml.Node) {
		setInt := func(dst *int, min int) {
			if i, ok := p.integer(fk, fv, min); ok {
				*dst = i
			}
		}
		setDur := func(dst *time.Duration) {
			if d, ok := p.duration(fk, fv); ok {
				*dst = d
			}
		}
		switch f {
		case "max_files":
			setInt(&l.MaxFiles, 1)
		case "max_fix_attempts":
			setInt(&l.MaxFixAttempts, 0)
		case "ci_fix_attempts":
			setInt(&l.CIFixAttempts, 0)
		case "max_steps":
			setInt(&l.MaxSteps, 1)
		case "max_tokens":
			setInt(&l.MaxTokens, 1)
		case "job_timeout":
			setDur(&l.JobTimeout)
		case "command_timeout":
			setDur(&l.CommandTimeout)
		case "blast_radius":
			setInt(&l.BlastRadius, 0)
		case "output_bytes":
			if i, ok := p.integer(fk, fv, MinOutputBytes); ok {
				l.OutputBytes = int64(i)
			}
		}
	})
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported value"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
