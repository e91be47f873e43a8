package repoconfig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// MaxFileSize is the largest .selfcode.yml Load reads.
const MaxFileSize = 64 * 1024

// Load reads <dir>/.selfcode.yml. A missing file yields Default(). The file
// must be a regular file (a symlink is refused: the checkout is untrusted
// and could point it anywhere on the host) no larger than MaxFileSize.
func Load(dir string) (*Config, error) {
	path := filepath.Join(dir, FileName)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", FileName, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", FileName)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("read %s: %d bytes, at most %d allowed", FileName, fi.Size(), MaxFileSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", FileName, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", FileName, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("read %s: more than %d bytes", FileName, MaxFileSize)
	}
	return Parse(data)
}

// VerifyCommands returns the configured verify commands, or, when none are
// configured, the commands Infer finds in the tree at dir (Inferred set).
// Configured commands get their Kind and Runner from GuessKind and
// GuessRunner. Every command has a Timeout (Limits.CommandTimeout when
// none was given) and the configured report globs. The result is empty
// when nothing could be inferred.
func (c *Config) VerifyCommands(dir string) []Command {
	var out []Command
	if len(c.Verify) > 0 {
		out = slices.Clone(c.Verify)
		for i := range out {
			out[i].Kind = GuessKind(out[i].Run)
			out[i].Runner = GuessRunner(out[i].Run)
		}
	} else {
		out = Infer(dir).Verify
	}
	for i := range out {
		if out[i].Timeout == 0 {
			out[i].Timeout = c.Limits.CommandTimeout
		}
		out[i].Reports = append(slices.Clone(c.Reports), out[i].Reports...)
	}
	return out
}

// SetupSteps returns the configured setup commands (with SetupNetwork),
// or, when neither setup nor verify is configured, the steps Infer finds
// in the tree at dir: inferred verify commands rely on inferred setup (the
// Python virtual environment), and a configured verify list says what it
// needs in setup. Every step has a Timeout.
func (c *Config) SetupSteps(dir string) []SetupStep {
	var out []SetupStep
	switch {
	case len(c.Setup) > 0:
		for i, run := range c.Setup {
			out = append(out, SetupStep{Name: fmt.Sprintf("setup %d", i+1), Run: run, Network: c.SetupNetwork})
		}
	case len(c.Verify) == 0:
		out = Infer(dir).Setup
		for i := range out {
			out[i].Network = out[i].Network && c.SetupNetwork
		}
	}
	for i := range out {
		out[i].Timeout = c.Limits.CommandTimeout
	}
	return out
}

func regular(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// ruleTargets returns the targets a make rule line names ("all test: deps"
// → all, test), or nil for anything else, such as a variable assignment
// ("test := x", "test ::= x") or a recipe line.
func ruleTargets(line []byte) [][]byte {
	if len(line) == 0 || line[0] == '\t' || line[0] == '#' {
		return nil
	}
	i := bytes.IndexByte(line, ':')
	if i <= 0 || bytes.ContainsAny(line[:i], "=#") {
		return nil
	}
	rest := bytes.TrimLeft(line[i:], ":")
	if len(rest) > 0 && rest[0] == '=' {
		return nil
	}
	return bytes.Fields(line[:i])
}

func hasMakeTarget(path, target string) bool {
	if !regular(path) {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		for _, t := range ruleTargets(sc.Bytes()) {
			if string(t) == target {
				return true
			}
		}
	}
	return false
}
