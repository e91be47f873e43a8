package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
)

// CgroupLimits are the limits the kernel applies to a container, read
// inside it: what the engine actually did with Limits. -1 means unlimited;
// 0 means not found (no such controller).
type CgroupLimits struct {
	Memory    int64 // bytes
	Pids      int64
	MilliCPUs int64 // CPU bandwidth in thousandths of a CPU (quota over period)
}

// The files a container's limits are read from (cgroup v2, then v1).
var cgroupFiles = []string{
	"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
	"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max",
	"/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us",
}

// cgroupScript prints "path value" for each readable file of its
// arguments, the form parseCgroupLimits reads.
const cgroupScript = `for f in "$@"; do if [ -r "$f" ]; then read -r v <"$f"; echo "$f $v"; fi; done`

// CgroupLimits reads the memory, pids and CPU limits from the container's
// own cgroup, proving (or not) that the engine honours Limits.
func (c *Container) CgroupLimits(ctx context.Context) (CgroupLimits, error) {
	if err := c.usable(); err != nil {
		return CgroupLimits{}, err
	}
	out, code, err := c.run(ctx, append([]string{"sh", "-c", cgroupScript, "sh"}, cgroupFiles...))
	if err != nil {
		return CgroupLimits{}, fmt.Errorf("read the sandbox's cgroup limits: %w", err)
	}
	if code != 0 {
		return CgroupLimits{}, fmt.Errorf("read the sandbox's cgroup limits: exit %d: %s", code, strings.TrimSpace(out))
	}
	return parseCgroupLimits(out), nil
}

// parseCgroupLimits reads "path value" lines of the cgroup files; other
// lines (of a build log, say) are ignored.
func parseCgroupLimits(s string) CgroupLimits {
	var l CgroupLimits
	var quota, period int64 // cgroup v1 CPU files, 0 when not seen
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		path, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case strings.HasSuffix(path, "/cpu.max"): // v2: "$MAX $PERIOD"
			max, per, _ := strings.Cut(v, " ")
			p, ok := cgroupNumber(strings.TrimSpace(per))
			if q, qok := cgroupNumber(max); ok && qok && l.MilliCPUs == 0 {
				l.MilliCPUs = milliCPUs(q, p)
			}
			continue
		case strings.HasSuffix(path, "/cpu.cfs_quota_us"): // v1: -1 is no limit
			if v == "-1" {
				quota = -1
			} else if n, ok := cgroupNumber(v); ok && quota == 0 {
				quota = n
			}
			continue
		case strings.HasSuffix(path, "/cpu.cfs_period_us"):
			if n, ok := cgroupNumber(v); ok && period == 0 {
				period = n
			}
			continue
		}
		n, ok := cgroupNumber(v)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(path, "memory.max"), strings.HasSuffix(path, "memory.limit_in_bytes"):
			if l.Memory == 0 {
				l.Memory = n
			}
		case strings.HasSuffix(path, "pids.max"):
			if l.Pids == 0 {
				l.Pids = n
			}
		}
	}
	switch {
	case l.MilliCPUs != 0:
	case quota < 0:
		l.MilliCPUs = -1
	case quota > 0 && period > 0:
		l.MilliCPUs = milliCPUs(quota, period)
	}
	return l
}

// cgroupNumber reads a limit: a non-negative number, or "max" (-1).
func cgroupNumber(v string) (int64, bool) {
	if v == "max" {
		return -1, true
	}
	x, err := strconv.ParseInt(v, 10, 64)
	if err != nil || x < 0 {
		return 0, false
	}
	// cgroup v1 writes "no limit" as a huge page-aligned number.
	if x >= 1<<62 {
		return -1, true
	}
	return x, true
}

// milliCPUs is a CPU quota per period in thousandths of a CPU; -1 when
// either is unlimited or the period is not a period.
func milliCPUs(quota, period int64) int64 {
	if quota < 0 || period <= 0 {
		return -1
	}
	return int64(math.Round(float64(quota) * 1000 / float64(period)))
}

// ImageInfo is what the engine says of an image.
type ImageInfo struct {
	ID      string
	Created time.Time
	Size    int64 // bytes
	Labels  map[string]string
}

// ImageInfo inspects ref on the engine; ErrImageNotFound when it is not there.
func (m *Manager) ImageInfo(ctx context.Context, ref string) (ImageInfo, error) {
	img, err := m.api.ImageInspect(ctx, ref)
	if errdefs.IsNotFound(err) {
		return ImageInfo{}, fmt.Errorf("%w: %s", ErrImageNotFound, ref)
	}
	if err != nil {
		return ImageInfo{}, fmt.Errorf("%w: inspect image %s: %w", ErrEngineUnavailable, ref, err)
	}
	info := ImageInfo{ID: img.ID, Size: img.Size}
	if img.Config != nil {
		info.Labels = img.Config.Labels
	}
	info.Created, _ = time.Parse(time.RFC3339Nano, img.Created)
	return info, nil
}
