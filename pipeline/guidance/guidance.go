package guidance

import (
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// File is one instructions file, read.
type File struct {
	Path      string // relative to the checkout, slash-separated
	Text      string
	Truncated bool // cut at the per-file cap
}

// Options bounds what is read.
type Options struct {
	// PerFile and Total cap the bytes read; defaults 8 KiB and 24 KiB.
	PerFile, Total int
}

// Names of the files read.
const (
	AgentsFile  = "AGENTS.md"
	CopilotFile = ".github/copilot-instructions.md"
)

// Find returns the instructions files of the checkout at root that apply to
// a change of files (relative, slash-separated; none: the whole
// repository): the root's AGENTS.md, the AGENTS.md nearest to each file's
// directory below the root, then .github/copilot-instructions.md — from the
// most general to the most specific, each once, within the caps. Only
// regular files inside the checkout are read: never a symbolic link.
func Find(root string, files []string, o Options) []File {
	if o.PerFile <= 0 {
		o.PerFile = 8 << 10
	}
	if o.Total <= 0 {
		o.Total = 24 << 10
	}
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	add(AgentsFile)
	var nested []string
	for _, f := range files {
		if p := nearest(root, path.Dir(path.Clean("/"+f))); p != "" && p != AgentsFile && !seen[p] {
			seen[p] = true
			nested = append(nested, p)
		}
	}
	// Most general first: shallower directories before deeper ones.
	sortByDepth(nested)
	paths = append(paths, nested...)
	add(CopilotFile)

	var out []File
	budget := o.Total
	for _, p := range paths {
		if budget <= 0 {
			break
		}
		f, ok := read(root, p, min(o.PerFile, budget))
		if !ok {
			continue
		}
		budget -= len(f.Text)
		out = append(out, f)
	}
	return out
}

// nearest is the AGENTS.md in dir (absolute within the checkout, "/" its
// root) or its closest parent below the root that has one, relative.
func nearest(root, dir string) string {
	for d := dir; d != "/" && d != "."; d = path.Dir(d) {
		rel := strings.TrimPrefix(path.Join(d, AgentsFile), "/")
		if regular(root, rel) {
			return rel
		}
	}
	return ""
}

func sortByDepth(ps []string) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && strings.Count(ps[j], "/") < strings.Count(ps[j-1], "/"); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// regular reports whether rel is a regular file inside root, reached
// through no symbolic link.
func regular(root, rel string) bool {
	cur := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if part == "" || part == "." || part == ".." {
			return false
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return false
		}
		last := i == len(parts)-1
		if fi.Mode()&os.ModeSymlink != 0 || (!last && !fi.IsDir()) || (last && !fi.Mode().IsRegular()) {
			return false
		}
	}
	return true
}

// read reads up to limit bytes of rel (cut at a UTF-8 boundary).
func read(root, rel string, limit int) (File, bool) {
	if !regular(root, rel) {
		return File{}, false
	}
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return File{}, false
	}
	defer f.Close()
	buf := make([]byte, limit+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return File{}, false
	}
	truncated := n > limit
	b := buf[:min(n, limit)]
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.FullRune(b[len(b)-lastStart(b):]); i++ {
		b = b[:len(b)-1] // a rune cut by the cap
	}
	text := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if text == "" {
		return File{}, false
	}
	return File{Path: rel, Text: text, Truncated: truncated}, true
}

// lastStart is how many bytes the last rune of b takes, from its first byte.
func lastStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return len(b) - i
		}
	}
	return 1
}
