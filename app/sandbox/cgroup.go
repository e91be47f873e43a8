package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
)

// CgroupLimits are the limits the kernel applies to a container, read
// inside it: what the engine actually did with Limits. -1 means unlimited;
// 0 means not found (no such controller).
type CgroupLimits struct {
	Memory int64 // bytes
	Pids   int64
}

// The files a container's limits are read from (cgroup v2, then v1).
var cgroupFiles = []string{
	"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
	"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max",
}

// CgroupLimits reads the memory and pids limits from the container's own
// cgroup, proving (or not) that the engine honours Limits.
func (c *Container) CgroupLimits(ctx context.Context) (CgroupLimits, error) {
	if err := c.usable(); err != nil {
		return CgroupLimits{}, err
	}
	script := `for f in "$@"; do if [ -r "$f" ]; then read -r v <"$f"; echo "$f $v"; fi; done`
	out, code, err := c.run(ctx, append([]string{"sh", "-c", script, "sh"}, cgroupFiles...))
	if err != nil {
		return CgroupLimits{}, fmt.Errorf("read the sandbox's cgroup limits: %w", err)
	}
	if code != 0 {
		return CgroupLimits{}, fmt.Errorf("read the sandbox's cgroup limits: exit %d: %s", code, strings.TrimSpace(out))
	}
	return parseCgroupLimits(out), nil
}

// parseCgroupLimits reads "path value" lines of the cgroup files.
func parseCgroupLimits(s string) CgroupLimits {
	var l CgroupLimits
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		path, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		n := int64(0)
		switch v = strings.TrimSpace(v); {
		case v == "max":
			n = -1
		default:
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || x < 0 {
				continue
			}
			n = x
			// cgroup v1 writes "no limit" as a huge page-aligned number.
			if x >= 1<<62 {
				n = -1
			}
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
	return l
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
