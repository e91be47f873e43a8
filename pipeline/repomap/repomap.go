package repomap

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/selfcode/selfcode/pipeline/tools"
)

// Defaults and bounds.
const (
	// DefaultBudget is the map's size in tokens when Options.Budget is 0.
	DefaultBudget = 2000
	// CharsPerToken is the estimate used to turn the budget into bytes.
	CharsPerToken = 4
	// maxFileSize: larger files are left out of the map.
	maxFileSize = 1 << 20
	// maxFiles bounds the walk; a bigger tree is mapped partially.
	maxFiles = 20000
	// outlineShare is the part of the budget outlines may use; the rest
	// lists paths.
	outlineShare = 0.75
)

// Options configure Build.
type Options struct {
	// Root is the checkout to map.
	Root string
	// Policy hides what the model may not read (deny globs and the
	// always-off-limits paths).
	Policy tools.Policy
	// Budget is the map's size in tokens (CharsPerToken bytes each);
	// default DefaultBudget.
	Budget int
	// Focus holds paths or words (e.g. from the issue) whose files are
	// ranked first.
	Focus []string
}

// file is one mappable file.
type file struct {
	rel     string
	isGo    bool
	isTest  bool
	score   int
	outline *outline
}

// tier orders files: focus matches, Go code, Go tests, everything else.
func (f *file) tier() int {
	switch {
	case f.score > 0:
		return 0
	case f.isGo && !f.isTest:
		return 1
	case f.isGo:
		return 2
	}
	return 3
}

// Build walks Root and returns the map, at most Budget*CharsPerToken bytes.
// The output is deterministic for a given tree and options. It skips .git,
// vendor, node_modules, symlinks, paths the policy hides, and binary or
// huge files.
func Build(ctx context.Context, opts Options) (string, error) {
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	files, truncated, err := walk(ctx, opts.Root, opts.Policy)
	if err != nil {
		return "", err
	}
	terms := focusTerms(opts.Focus)
	for _, f := range files {
		if f.isGo {
			f.outline = outlineFile(filepath.Join(opts.Root, filepath.FromSlash(f.rel)))
		}
		f.score = score(f, terms)
	}
	sort.SliceStable(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if a.tier() != b.tier() {
			return a.tier() < b.tier()
		}
		if a.score != b.score {
			return a.score > b.score
		}
		return a.rel < b.rel
	})
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("repomap: %w", err)
	}
	return render(files, truncated, budget*CharsPerToken), nil
}

// walk lists the files worth mapping, in lexical order.
func walk(ctx context.Context, root string, policy tools.Policy) ([]*file, bool, error) {
	var files []*file
	truncated := false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // unreadable entry: leave it out
		}
		if len(files)%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "vendor", "node_modules":
				return filepath.SkipDir
			}
			if !policy.CanRead(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !policy.CanRead(rel) {
			return nil
		}
		if len(files) >= maxFiles {
			truncated = true
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil || info.Size() > maxFileSize || binary(p) {
			return nil
		}
		isGo := strings.HasSuffix(rel, ".go")
		files = append(files, &file{rel: rel, isGo: isGo, isTest: isGo && strings.HasSuffix(rel, "_test.go")})
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("repomap: walk %s: %w", root, err)
	}
	return files, truncated, nil
}

// binary sniffs the first bytes for a NUL, as git does.
func binary(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return true
	}
	defer f.Close()
	var buf [1024]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return true
	}
	return bytes.IndexByte(buf[:n], 0) >= 0
}

// term is one focus entry, lower-cased; path-like entries (with a / or a
// dot) match paths, words also match identifiers.
type term struct {
	text     string
	pathLike bool
}

func focusTerms(focus []string) []term {
	seen := map[string]bool{}
	var out []term
	for _, f := range focus {
		f = strings.ToLower(strings.Trim(strings.TrimSpace(f), "`'\"()[]{},;:"))
		f = strings.TrimPrefix(f, "./")
		f = strings.TrimSuffix(f, "/")
		if len(f) < 2 || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, term{text: f, pathLike: strings.ContainsAny(f, "/.")})
	}
	return out
}

// score rates how well a file matches the focus terms.
func score(f *file, terms []term) int {
	if len(terms) == 0 {
		return 0
	}
	rel := strings.ToLower(f.rel)
	base := path.Base(rel)
	stem := strings.TrimSuffix(base, path.Ext(base))
	total := 0
	for _, t := range terms {
		s := 0
		switch {
		case rel == t.text:
			s = 100
		case strings.HasPrefix(rel, t.text+"/"):
			s = 50
		case base == t.text || stem == t.text:
			s = 40
		case t.pathLike && strings.HasSuffix(rel, "/"+t.text):
			s = 60
		case len(t.text) >= 4 && strings.Contains(rel, t.text):
			s = 20
		}
		if s == 0 && !t.pathLike && f.outline != nil {
			s = f.outline.matches(t.text)
		}
		total += s
	}
	if f.isTest {
		total = (total + 1) / 2 // a match in a test ranks after the same match in code
	}
	return total
}

// render lays out the ranked files within max bytes.
func render(files []*file, truncated bool, max int) string {
	var out strings.Builder
	header := fmt.Sprintf("Repository map: %d files", len(files))
	if truncated {
		header += fmt.Sprintf(" (walk stopped at %d)", maxFiles)
	}
	header += "; Go files outlined, others by path.\n"
	if len(header) > max {
		return ""
	}
	out.WriteString(header)

	const trailerRoom = 32 // "… 123456 more files\n" and a section line
	outlineMax := int(float64(max) * outlineShare)
	shown := make([]bool, len(files))
	for i, f := range files {
		if f.outline == nil {
			continue
		}
		text := f.outline.render(f.rel)
		if out.Len()+len(text) > outlineMax {
			continue
		}
		out.WriteString(text)
		shown[i] = true
	}
	rest := 0
	for i := range files {
		if !shown[i] {
			rest++
		}
	}
	if rest == 0 {
		return out.String()
	}
	section := "Other files:\n"
	listed := 0
	if out.Len()+len(section)+trailerRoom <= max {
		out.WriteString(section)
		for i, f := range files {
			if shown[i] {
				continue
			}
			line := f.rel + "\n"
			if out.Len()+len(line)+trailerRoom > max {
				break
			}
			out.WriteString(line)
			shown[i] = true
			listed++
		}
	}
	if more := rest - listed; more > 0 {
		trailer := fmt.Sprintf("… %d more files\n", more)
		if out.Len()+len(trailer) <= max {
			out.WriteString(trailer)
		}
	}
	return out.String()
}
