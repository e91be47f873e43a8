package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	dockerfiles "github.com/selfcode/selfcode/internal/dockerfile"
	"github.com/selfcode/selfcode/pipeline/smoke"
)

// Bounds of a smoke build context.
const (
	// MaxContextBytes bounds the build context (the tree less .git and what
	// .dockerignore excludes).
	MaxContextBytes = 512 << 20
	maxDockerfile   = 1 << 20
	maxIgnoreFile   = 1 << 20
)

// errContextTooLarge stops the walk of a context past MaxContextBytes.
var errContextTooLarge = errors.New("build context too large")

// snapshotContext writes dir's build context (at most limit bytes of tar)
// to a temporary file: every
// entry the Docker CLI would send (regular files, directories and symlinks,
// never followed) except the top-level .git and what .dockerignore
// excludes; the Dockerfile and .dockerignore always go. It reads the
// Dockerfile for the images it builds from. Everything is read through an
// os.Root, so nothing outside dir is read, whatever the tree's symlinks say.
func snapshotContext(dir, dockerfile, tempDir string, limit int64) (*smoke.Snapshot, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open the checkout: %w", err)
	}
	defer root.Close()
	df, err := readSmall(root, dockerfile, maxDockerfile)
	if err != nil {
		return nil, &smoke.Failure{Reason: fmt.Sprintf("smoke.dockerfile %s cannot be read from the repository: %v", dockerfile, err)}
	}
	bases, err := dockerfiles.BaseImages(df, nil) // selfcode passes no build arguments
	if err != nil {
		return nil, &smoke.Failure{Reason: fmt.Sprintf("%s: %v", dockerfile, err)}
	}
	var excludes []string
	if b, err := readSmall(root, ".dockerignore", maxIgnoreFile); err == nil {
		if excludes, err = ignorefile.ReadAll(bytes.NewReader(b)); err != nil {
			return nil, &smoke.Failure{Reason: fmt.Sprintf(".dockerignore: %v", err)}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, &smoke.Failure{Reason: fmt.Sprintf(".dockerignore cannot be read: %v", err)}
	}
	pm, err := patternmatcher.New(excludes)
	if err != nil {
		return nil, &smoke.Failure{Reason: fmt.Sprintf(".dockerignore: %v", err)}
	}
	f, err := os.CreateTemp(tempDir, "selfcode-smoke-*.tar")
	if err != nil {
		return nil, fmt.Errorf("create the build context file: %w", err)
	}
	snap := &smoke.Snapshot{Path: f.Name(), Dockerfile: dockerfile, Bases: bases}
	cw := &countingWriter{w: f, limit: limit}
	err = writeContext(cw, root, pm, path.Clean(dockerfile))
	err = errors.Join(err, f.Close())
	if err != nil {
		snap.Remove()
		if errors.Is(err, errContextTooLarge) {
			return nil, &smoke.Failure{Reason: fmt.Sprintf("the build context is larger than %d MiB: list what the image does not need in .dockerignore", limit>>20)}
		}
		return nil, fmt.Errorf("write the build context: %w", err)
	}
	snap.Size = cw.n
	return snap, nil
}

// writeContext writes the context's entries as a tar stream.
func writeContext(w io.Writer, root *os.Root, pm *patternmatcher.PatternMatcher, dockerfile string) error {
	t := &tarWriter{tw: tar.NewWriter(w), root: root}
	walkErr := fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return fs.SkipDir
		}
		if rel != dockerfile && rel != ".dockerignore" {
			excluded, err := pm.MatchesOrParentMatches(rel)
			if err != nil {
				return err
			}
			if excluded {
				if d.IsDir() && !pm.Exclusions() {
					return fs.SkipDir // nothing below can be let in again
				}
				return nil
			}
		}
		return t.add(rel)
	})
	return errors.Join(walkErr, t.tw.Close())
}

// readSmall reads a regular file of at most limit bytes below root.
func readSmall(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes, at most %d allowed", fi.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

type countingWriter struct {
	w     io.Writer
	n     int64
	limit int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.limit {
		return 0, errContextTooLarge
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
