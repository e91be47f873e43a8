package tools

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxEditSize is the largest file the tools read or write.
const maxEditSize = 4 << 20

// fileState is a file's content identity, for max_files accounting.
type fileState struct {
	exists bool
	sum    [32]byte
}

func stateOf(data []byte, exists bool) fileState {
	if !exists {
		return fileState{}
	}
	return fileState{exists: true, sum: sha256.Sum256(data)}
}

// readFile reads a regular file for viewing or editing.
func readFile(tg target) ([]byte, fs.FileInfo, error) {
	fi, err := os.Stat(tg.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fail(OutcomeError, "%s does not exist", tg.rel)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("stat %s: %w", tg.rel, err)
	}
	if fi.IsDir() {
		return nil, fi, fail(OutcomeError, "%s is a directory", tg.rel)
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fail(OutcomeError, "%s is not a regular file", tg.rel)
	}
	if fi.Size() > maxEditSize {
		return nil, fi, fail(OutcomeError, "%s is %d bytes; files over %d bytes are not handled", tg.rel, fi.Size(), maxEditSize)
	}
	f, err := os.Open(tg.abs)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", tg.rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEditSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", tg.rel, err)
	}
	return data, fi, nil
}

// isBinary reports a NUL byte near the start, as git does.
func isBinary(data []byte) bool {
	n := len(data)
	if n > 8000 {
		n = 8000
	}
	return bytes.IndexByte(data[:n], 0) >= 0
}

// admit checks max_files before a write that leaves rel in state next.
// before is rel's state right now (used the first time rel is touched).
func (t *Tools) admit(rel string, before, next fileState) error {
	if t.maxFiles <= 0 {
		return nil
	}
	orig, seen := t.orig[rel]
	if !seen {
		orig = before
	}
	if next == orig || t.dirty[rel] {
		return nil
	}
	if len(t.dirty)+1 > t.maxFiles {
		return &toolError{outcome: OutcomeDenied, msg: fmt.Sprintf(
			"access denied: changing %s would make %d changed files; this job may change at most %d (already changed: %s)",
			rel, len(t.dirty)+1, t.maxFiles, strings.Join(t.Changed(), ", "))}
	}
	return nil
}

// record notes that rel went from before to next.
func (t *Tools) record(rel string, before, next fileState) {
	orig, seen := t.orig[rel]
	if !seen {
		orig = before
		t.orig[rel] = orig
	}
	if next == orig {
		delete(t.dirty, rel)
	} else {
		t.dirty[rel] = true
	}
}

// writeFile replaces tg's content atomically: a temporary file in the same
// directory renamed over the path, so the write never follows a symlink
// swapped in at the last moment and a failure leaves the old content.
// Missing parent directories are created and removed again on failure.
func writeFile(tg target, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(tg.abs)
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, statErr := os.Lstat(d); statErr == nil {
			break
		} else if !errors.Is(statErr, fs.ErrNotExist) {
			return fmt.Errorf("stat %s: %w", d, statErr)
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	defer func() {
		if err != nil {
			for _, d := range made {
				_ = os.Remove(d)
			}
		}
	}()
	if len(made) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create directories for %s: %w", tg.rel, err)
		}
	}
	f, err := os.CreateTemp(dir, ".selfcode-tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", tg.rel, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tg.rel, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s: %w", tg.rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tg.rel, err)
	}
	if err := os.Rename(tmp, tg.abs); err != nil {
		return fmt.Errorf("write %s: %w", tg.rel, err)
	}
	return nil
}
