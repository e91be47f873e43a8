package sandbox

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/pipeline/smoke"
)

// contextEntries lists the tar's entries (links as "name -> target").
func contextEntries(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := h.Name
		if h.Typeflag == tar.TypeSymlink {
			name += " -> " + h.Linkname
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func writeTreeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSnapshotContext(t *testing.T) {
	t.Parallel()
	dir := writeTreeFiles(t, map[string]string{
		"Dockerfile":           "FROM selfcode-sandbox:latest\nCOPY . /src\n",
		".dockerignore":        "# build output\nbin\n*.log\nDockerfile\n.dockerignore\ndocs/**\n!docs/keep.md\n",
		"main.go":              "package main\n",
		"bin/app":              "binary",
		"debug.log":            "x",
		"docs/a.md":            "a",
		"docs/keep.md":         "k",
		".git/config":          "[remote]\n",
		"internal/x/x.go":      "package x\n",
		"internal/x/trace.log": "y",
	})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshotContext(dir, "Dockerfile", t.TempDir(), MaxContextBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Remove()
	got := contextEntries(t, snap.Path)
	// .git never goes; ignored paths stay out except the Dockerfile and
	// .dockerignore themselves; a re-included file brings its directory;
	// *.log is anchored at the root, as Docker reads it; the symlink goes
	// as a link, never followed.
	want := []string{".dockerignore", "Dockerfile", "docs/", "docs/keep.md", "internal/", "internal/x/", "internal/x/trace.log", "internal/x/x.go", "main.go", "passwd -> /etc/passwd"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("context\n%q\nwant\n%q", got, want)
	}
	if !reflect.DeepEqual(snap.Bases, []string{"selfcode-sandbox:latest"}) || snap.Dockerfile != "Dockerfile" || snap.Size == 0 {
		t.Errorf("snapshot %+v", snap)
	}
	if err := snap.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(snap.Path); !errors.Is(err, os.ErrNotExist) {
		t.Error("Remove left the file")
	}
}

func TestSnapshotContextFailures(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 64<<10)
	tests := []struct {
		name       string
		files      map[string]string
		dockerfile string
		link       [2]string // a symlink to make: name, target
		want       string
	}{
		{"no Dockerfile", map[string]string{"main.go": "package main\n"}, "Dockerfile", [2]string{}, "cannot be read"},
		{"a Dockerfile that leaves the checkout", map[string]string{"main.go": "x"}, "Dockerfile", [2]string{"Dockerfile", "/etc/hostname"}, "cannot be read"},
		{"not a Dockerfile", map[string]string{"Dockerfile": "RUN true\n"}, "Dockerfile", [2]string{}, "no FROM"},
		{"too large", map[string]string{"Dockerfile": "FROM scratch\n", "a": big, "b": big}, "Dockerfile", [2]string{}, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTreeFiles(t, tt.files)
			if tt.link[0] != "" {
				if err := os.Symlink(tt.link[1], filepath.Join(dir, tt.link[0])); err != nil {
					t.Fatal(err)
				}
			}
			tmp := t.TempDir()
			_, err := snapshotContext(dir, tt.dockerfile, tmp, 100<<10)
			var f *smoke.Failure
			if !errors.As(err, &f) || !strings.Contains(f.Reason, tt.want) {
				t.Fatalf("err = %v, want a failure saying %q", err, tt.want)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left %d file(s) behind", len(left))
			}
		})
	}
}

// TestReadBuild reads the classic builder's stream as captured from the
// engine (testdata/build): the images the steps made, never a base image,
// the log without colour codes, and the Dockerfile's failure.
func TestReadBuild(t *testing.T) {
	t.Parallel()
	read := func(name string) buildResult {
		f, err := os.Open(filepath.Join("testdata", "build", name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		res, err := readBuild(f)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ok := read("multistage.jsonl")
	if want := []string{"b2d46aeb13d1", "ffb5f1ca05ac", "51c1da25c3af", "5249a9d741c3"}; !reflect.DeepEqual(ok.ids, want) {
		t.Errorf("ids %q, want %q (never the base abb5fcf6a34e)", ok.ids, want)
	}
	if ok.failure != "" || !strings.Contains(ok.log, "Successfully built 5249a9d741c3") {
		t.Errorf("failure %q log %q", ok.failure, ok.log)
	}
	bad := read("network.jsonl")
	if len(bad.ids) != 0 || !strings.Contains(bad.failure, "returned a non-zero code: 1") {
		t.Errorf("ids %q failure %q", bad.ids, bad.failure)
	}
	if !strings.Contains(bad.log, "socket.gaierror: [Errno -3] Temporary failure in name resolution\n") || strings.Contains(bad.log, "\x1b") {
		t.Errorf("log:\n%q", bad.log)
	}
	// A log longer than the kept tail starts at a whole line.
	var b strings.Builder
	for i := range 20000 {
		b.WriteString(`{"stream":"line ` + strings.Repeat("x", i%7) + "\\n\"}\n")
	}
	long, err := readBuild(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(long.log) > buildLogBytes || !strings.HasPrefix(long.log, "line ") {
		t.Errorf("long log: %d bytes, starts %q", len(long.log), long.log[:20])
	}
}

func FuzzReadBuild(f *testing.F) {
	for _, name := range []string{"multistage.jsonl", "network.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "build", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		res, _ := readBuild(strings.NewReader(s))
		if len(res.log) > buildLogBytes {
			t.Errorf("log of %d bytes", len(res.log))
		}
		for _, id := range res.ids {
			if !stepIDRE.MatchString(" ---> " + id) {
				t.Errorf("id %q", id)
			}
		}
	})
}

func TestSmokeTag(t *testing.T) {
	t.Parallel()
	m := &Manager{opts: Options{Instance: "prod.eu-1_a"}}
	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tag := m.smokeTag(deadline)
	labels, ok := smokeTagLabels(tag)
	if !ok || labels[LabelInstance] != "prod.eu-1_a" || labels[LabelDeadline] != "2030-01-02T03:04:05Z" {
		t.Fatalf("%s → %v %v", tag, labels, ok)
	}
	for _, ref := range []string{"selfcode-sandbox:latest", "selfcode-smoke:latest", "selfcode-smoke:x.notanumber.ab", "selfcode-smoke:.1.ab"} {
		if l, ok := smokeTagLabels(ref); ok {
			t.Errorf("%s read as a smoke image: %v", ref, l)
		}
	}
}
