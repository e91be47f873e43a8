package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testdata/cgroup: v1 files captured from containers of this machine's
// engine (cgroup v1) with and without --memory/--pids-limit; v2 files in
// the form the kernel's cgroup-v2 documentation gives (memory.max and
// pids.max hold a number or "max").
func TestParseCgroupLimits(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]CgroupLimits{
		"v1-limited.txt":   {Memory: 256 << 20, Pids: 64},
		"v1-unlimited.txt": {Memory: -1, Pids: -1},
		"v2-limited.txt":   {Memory: 256 << 20, Pids: 64},
		"v2-unlimited.txt": {Memory: -1, Pids: -1},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "cgroup", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := parseCgroupLimits(string(data)); got != want {
			t.Errorf("%s: %+v, want %+v", file, got, want)
		}
	}
	if got := parseCgroupLimits("garbage\n/sys/fs/cgroup/pids.max -3\n"); got != (CgroupLimits{}) {
		t.Errorf("garbage: %+v", got)
	}
}

func FuzzParseCgroupLimits(f *testing.F) {
	for _, name := range []string{"v1-limited.txt", "v2-unlimited.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "cgroup", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := parseCgroupLimits(s)
		if l.Memory < -1 || l.Pids < -1 {
			t.Fatalf("%+v from %q", l, s)
		}
	})
}

// The engine applies the configured limits: read back from the
// container's own cgroup.
func TestCgroupLimitsAreTheConfiguredOnes(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Limits{Memory: 300 << 20, Pids: 99})
	c := start(t, m, Spec{})
	got, err := c.CgroupLimits(context.Background())
	if err != nil || got != (CgroupLimits{Memory: 300 << 20, Pids: 99}) {
		t.Fatalf("CgroupLimits = %+v, %v", got, err)
	}
	info, err := m.ImageInfo(context.Background(), testImage())
	if err != nil || info.ID == "" || info.Labels[ImageCacheLabel] != "/cache" || info.Created.IsZero() {
		t.Fatalf("ImageInfo = %+v, %v", info, err)
	}
	if _, err := m.ImageInfo(context.Background(), "selfcode-no-such-image:"+randomHex(4)); !errors.Is(err, ErrImageNotFound) {
		t.Fatalf("missing image: %v", err)
	}
}
