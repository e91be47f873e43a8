package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testdata/cgroup: v1 files captured from containers of this machine's
// engine (cgroup v1) with and without --memory/--pids-limit/--cpus, and the
// log of a smoke build whose RUN step printed them; v2 files in the form the
// kernel's cgroup-v2 documentation gives (memory.max and pids.max hold a
// number or "max", cpu.max "$MAX $PERIOD").
func TestParseCgroupLimits(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]CgroupLimits{
		"v1-limited.txt":   {Memory: 256 << 20, Pids: 64, MilliCPUs: 500},
		"v1-unlimited.txt": {Memory: -1, Pids: -1, MilliCPUs: -1},
		"v2-limited.txt":   {Memory: 256 << 20, Pids: 64, MilliCPUs: 500},
		"v2-unlimited.txt": {Memory: -1, Pids: -1, MilliCPUs: -1},
		// A smoke build's log: a RUN step printed its limits (no pids
		// limit reaches a build) among the builder's own lines.
		"v1-build-log.txt": {Memory: 320 << 20, Pids: -1, MilliCPUs: 500},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "cgroup", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := parseCgroupLimits(string(data)); got != want {
			t.Errorf("%s: %+v, want %+v", file, got, want)
		}
	}
	for in, want := range map[string]CgroupLimits{
		"garbage\n/sys/fs/cgroup/pids.max -3\n":                                                 {},
		"/sys/fs/cgroup/cpu.max 150000 100000\n":                                                {MilliCPUs: 1500},
		"/sys/fs/cgroup/cpu.max 150000\n/sys/fs/cgroup/cpu.max x 100000\n":                      {},
		"/sys/fs/cgroup/cpu/cpu.cfs_quota_us 25000\n":                                           {},
		"/sys/fs/cgroup/cpu/cpu.cfs_period_us 100000\n/sys/fs/cgroup/cpu/cpu.cfs_quota_us -1\n": {MilliCPUs: -1},
	} {
		if got := parseCgroupLimits(in); got != want {
			t.Errorf("%q: %+v, want %+v", in, got, want)
		}
	}
}

func FuzzParseCgroupLimits(f *testing.F) {
	for _, name := range []string{"v1-limited.txt", "v2-unlimited.txt", "v1-build-log.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "cgroup", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := parseCgroupLimits(s)
		if l.Memory < -1 || l.Pids < -1 || l.MilliCPUs < -1 {
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
	if err != nil || got != (CgroupLimits{Memory: 300 << 20, Pids: 99, MilliCPUs: 1000}) {
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
