package sandbox

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// checkRelPath accepts only a non-empty local path that names something
// below the work tree (not the work tree itself).
func checkRelPath(p string) error {
	if p == "" || strings.ContainsRune(p, 0) || !filepath.IsLocal(p) {
		return fmt.Errorf("%w: path %q is not inside the work tree", ErrInvalid, p)
	}
	if path.Clean(filepath.ToSlash(p)) == "." {
		return fmt.Errorf("%w: path %q names the work tree itself", ErrInvalid, p)
	}
	return nil
}

// tarWriter adds entries for files below an os.Root, so that nothing outside
// the host directory can be read even through symlinked parents.
type tarWriter struct {
	tw       *tar.Writer
	root     *os.Root
	uid, gid int
}

// add writes the entry for rel (slash-separated, "." for the root).
func (t *tarWriter) add(rel string) error {
	fi, err := t.root.Lstat(rel)
	if err != nil {
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	hdr := &tar.Header{
		Name:    rel,
		ModTime: fi.ModTime(),
		Uid:     t.uid,
		Gid:     t.gid,
		Mode:    int64(fi.Mode().Perm()),
	}
	switch {
	case fi.Mode().IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name = rel + "/"
		if rel == "." {
			hdr.Name = "./"
		}
		hdr.Mode |= 0o700
	case fi.Mode().IsRegular():
		hdr.Typeflag = tar.TypeReg
		hdr.Size = fi.Size()
		hdr.Mode |= 0o600
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := t.root.Readlink(rel)
		if err != nil {
			return fmt.Errorf("read link %s: %w", rel, err)
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
		hdr.Mode = 0o777
	default:
		return nil // sockets, devices and pipes are not part of a work tree
	}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write tar header %s: %w", rel, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := t.root.Open(rel)
	if err != nil {
		return fmt.Errorf("open %s: %w", rel, err)
	}
	defer f.Close()
	n, err := io.Copy(t.tw, io.LimitReader(f, hdr.Size))
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if n != hdr.Size {
		return fmt.Errorf("read %s: file shrank from %d to %d bytes while copying", rel, hdr.Size, n)
	}
	return nil
}

func openTar(w io.Writer, dir string, uid, gid int) (*tarWriter, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open work tree: %w", err)
	}
	return &tarWriter{tw: tar.NewWriter(w), root: root, uid: uid, gid: gid}, nil
}

func (t *tarWriter) close() error {
	err := t.tw.Close()
	return errors.Join(err, t.root.Close())
}

// writeTree writes dir's whole tree as a tar stream; the top-level .git is
// skipped unless includeGit.
func writeTree(w io.Writer, dir string, uid, gid int, includeGit bool) error {
	t, err := openTar(w, dir, uid, gid)
	if err != nil {
		return err
	}
	walkErr := fs.WalkDir(t.root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel == ".git" && !includeGit {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil // a worktree's or submodule's .git file: SkipDir would skip the rest of the tree
		}
		return t.add(rel)
	})
	return errors.Join(walkErr, t.close())
}

// writeFiles writes the named files (and their parent directories, so new
// directories belong to the sandbox user) as a tar stream.
func writeFiles(w io.Writer, dir string, files []string, uid, gid int) error {
	t, err := openTar(w, dir, uid, gid)
	if err != nil {
		return err
	}
	var dirs, regular []string
	for _, f := range files {
		f = path.Clean(filepath.ToSlash(f))
		regular = append(regular, f)
		for p := path.Dir(f); p != "."; p = path.Dir(p) {
			dirs = append(dirs, p)
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	slices.Sort(regular)
	regular = slices.Compact(regular)
	var addErr error
	for _, d := range dirs {
		if addErr = t.add(d); addErr != nil {
			break
		}
	}
	if addErr == nil {
		for _, f := range regular {
			if slices.Contains(dirs, f) {
				continue // already added as a parent
			}
			if addErr = t.add(f); addErr != nil {
				break
			}
		}
	}
	return errors.Join(addErr, t.close())
}
