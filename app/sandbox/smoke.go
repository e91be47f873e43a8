package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"

	"github.com/selfcode/selfcode/pipeline/smoke"
)

// SmokeRepository is the image repository smoke builds are tagged in.
const SmokeRepository = "selfcode-smoke"

// buildLogBytes bounds the build log kept (its end).
const buildLogBytes = 64 << 10

// SmokeBackend runs the smoke stage (smoke.Engine) on the Manager's
// engine: images built with the classic builder, without network and
// without pulling; shadow containers locked down like job containers, with
// no network at all, reached through the engine (shadow.go).
type SmokeBackend struct {
	Manager *Manager
	// TempDir holds build contexts while they wait for their build
	// (default: the system's temporary directory).
	TempDir string
}

var _ smoke.Engine = SmokeBackend{}

// Available checks once that the engine builds images (a build of an empty
// image, which proxies that refuse builds answer with 403) and that this
// process reaches a service in a shadow container through a helper
// (probeShadow).
func (b SmokeBackend) Available(ctx context.Context) error {
	m := b.Manager
	if err := m.startup(ctx); err != nil {
		return err
	}
	m.smokeMu.Lock()
	defer m.smokeMu.Unlock()
	if m.smokeReady {
		return nil
	}
	if err := m.probeBuild(ctx); err != nil {
		return fmt.Errorf("the Docker engine does not build images for selfcode: %w", err)
	}
	if err := m.probeShadow(ctx); err != nil {
		return err
	}
	m.smokeReady = true
	return nil
}

// probeBuild builds and removes an image holding nothing but a label.
func (m *Manager) probeBuild(ctx context.Context) error {
	ctxTar, err := dockerfileContext("FROM scratch\nLABEL selfcode.probe=1\n")
	if err != nil {
		return err
	}
	tag := m.smokeTag(time.Now().Add(time.Minute))
	m.owned.add(tag)
	defer m.owned.remove(tag)
	res, err := m.build(ctx, ctxTar, "Dockerfile", tag)
	if err != nil {
		return err
	}
	m.removeImages(context.WithoutCancel(ctx), tag, res.ids)
	if res.failure != "" {
		return errors.New(res.failure)
	}
	return nil
}

// dockerfileContext is a build context holding only a Dockerfile.
func dockerfileContext(dockerfile string) (*bytes.Buffer, error) {
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return nil, err
	}
	return &ctxTar, tw.Close()
}

// Snapshot captures dir's build context now.
func (b SmokeBackend) Snapshot(ctx context.Context, dir, dockerfile string) (*smoke.Snapshot, error) {
	return snapshotContext(dir, dockerfile, b.TempDir, MaxContextBytes)
}

// Build builds spec's snapshot, refusing first when a base image is not on
// the engine (the classic builder would pull it).
func (b SmokeBackend) Build(ctx context.Context, spec smoke.BuildSpec) (smoke.Image, error) {
	m := b.Manager
	if err := m.startup(ctx); err != nil {
		return nil, err
	}
	for _, base := range spec.Snapshot.Bases {
		if _, err := m.api.ImageInspect(ctx, base); err != nil {
			if errdefs.IsNotFound(err) {
				return nil, &smoke.Failure{Reason: fmt.Sprintf("%s builds from %s, which is not on the Docker engine; selfcode never pulls images: load it on the engine first, or build from an image that is there", spec.Snapshot.Dockerfile, base)}
			}
			return nil, fmt.Errorf("inspect base image %s: %w", base, err)
		}
	}
	f, err := os.Open(spec.Snapshot.Path)
	if err != nil {
		return nil, fmt.Errorf("open the build context: %w", err)
	}
	defer f.Close()
	tag := m.smokeTag(spec.Deadline)
	m.owned.add(tag)
	res, err := m.build(ctx, f, spec.Snapshot.Dockerfile, tag)
	if err == nil && res.failure == "" {
		m.log.Info("smoke image built", "job_id", spec.JobID, "image", tag, "layers", len(res.ids))
		return &builtImage{m: m, tag: tag, ids: res.ids}, nil
	}
	// Whatever the build made before it stopped goes now.
	m.removeImages(context.WithoutCancel(ctx), tag, res.ids)
	m.owned.remove(tag)
	if err != nil {
		return nil, err
	}
	return nil, &smoke.Failure{Reason: res.failure, Log: res.log}
}

type buildResult struct {
	ids     []string // images the build made, in order (base images excluded)
	log     string   // the end of its output
	failure string   // what made it fail, when the Dockerfile did
}

// build runs one classic-builder build of contextTar: no network, no
// cache (nothing is shared with other builds, so every layer is this
// build's own), intermediate containers always removed, the job's memory,
// CPU and open-file limits. The build API takes no pids limit, no
// capability and no security option (the engine refuses SecurityOpt on a
// build): docs/security.md says what that leaves.
// The image is found again by its tag (smokeTag), not by labels: the
// classic builder adds a layer per label, a commit each. An error means
// the engine could not build; a failing Dockerfile is a result with
// failure set.
func (m *Manager) build(ctx context.Context, contextTar io.Reader, dockerfile, tag string) (buildResult, error) {
	lim := m.opts.Limits
	resp, err := m.api.ImageBuild(ctx, contextTar, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  dockerfile,
		Version:     build.BuilderV1,
		NoCache:     true,
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		NetworkMode: network.NetworkNone,
		Memory:      lim.Memory,
		MemorySwap:  lim.Memory,
		CPUPeriod:   100_000,
		CPUQuota:    int64(lim.CPUs * 100_000),
		Ulimits:     []*container.Ulimit{{Name: "nofile", Soft: int64(lim.NoFile), Hard: int64(lim.NoFile)}},
	})
	if err != nil {
		return buildResult{}, fmt.Errorf("build the smoke image: %w", err)
	}
	defer resp.Body.Close()
	res, err := readBuild(resp.Body)
	if err != nil {
		return res, fmt.Errorf("read the smoke build: %w", err)
	}
	return res, nil
}

// stepIDRE matches the classic builder's " ---> 0123456789ab" line naming
// the image a step made (or, after FROM, its base image).
var stepIDRE = regexp.MustCompile(`^ ---> ([0-9a-f]{12,64})\s*$`)

// ansiRE matches the colour codes the builder puts around a step's stderr.
var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// readBuild reads the build's JSON message stream: its output (the end
// kept), the images its steps made, and its error.
func readBuild(r io.Reader) (buildResult, error) {
	var res buildResult
	log := &tailBuffer{max: buildLogBytes}
	dec := json.NewDecoder(r)
	var pending strings.Builder // output up to the next newline
	afterFrom := false
	for {
		var msg struct {
			Stream      string `json:"stream"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
			Error string `json:"error"`
		}
		err := dec.Decode(&msg)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			res.log = log.String()
			return res, err
		}
		if msg.ErrorDetail != nil || msg.Error != "" {
			res.failure = msg.Error
			if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
				res.failure = msg.ErrorDetail.Message
			}
			log.WriteString(res.failure + "\n")
			continue
		}
		text := ansiRE.ReplaceAllString(msg.Stream, "") // the builder colours a step's stderr
		log.WriteString(text)
		pending.WriteString(text)
		for {
			s := pending.String()
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				break
			}
			line := s[:i]
			pending.Reset()
			pending.WriteString(s[i+1:])
			if strings.HasPrefix(line, "Step ") {
				_, instr, _ := strings.Cut(line, " : ")
				afterFrom = strings.HasPrefix(strings.ToUpper(strings.TrimSpace(instr)), "FROM ")
				continue
			}
			if m := stepIDRE.FindStringSubmatch(line); m != nil {
				if !afterFrom {
					res.ids = append(res.ids, m[1])
				}
				afterFrom = false
			}
		}
	}
	res.log = log.String()
	return res, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
	cut bool
}

func (t *tailBuffer) WriteString(s string) {
	t.b = append(t.b, s...)
	if len(t.b) > t.max {
		t.b = slices.Clone(t.b[len(t.b)-t.max:])
		t.cut = true
	}
}

func (t *tailBuffer) String() string {
	if t.cut {
		if i := bytes.IndexByte(t.b, '\n'); i >= 0 {
			return string(t.b[i+1:]) // from the first whole line
		}
	}
	return string(t.b)
}

// removeImages removes a build's images: the tag, then every image the
// build made, newest first (children before parents), never forced and never
// pruning parents, so no image the build did not make is touched.
func (m *Manager) removeImages(ctx context.Context, tag string, ids []string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var errs []error
	if _, err := m.api.ImageRemove(ctx, tag, image.RemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("remove %s: %w", tag, err))
	}
	for _, id := range slices.Backward(ids) {
		if _, err := m.api.ImageRemove(ctx, id, image.RemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// builtImage is a smoke image, removed with every layer its build made.
type builtImage struct {
	m    *Manager
	tag  string
	ids  []string
	once sync.Once
	err  error
}

func (i *builtImage) Ref() string { return i.tag }

// IDs are the images the build made (the last is the image itself).
func (i *builtImage) IDs() []string { return slices.Clone(i.ids) }

func (i *builtImage) Remove(ctx context.Context) error {
	i.once.Do(func() {
		i.err = i.m.removeImages(ctx, i.tag, i.ids)
		i.m.owned.remove(i.tag)
		if i.err == nil {
			i.m.log.Info("smoke image removed", "image", i.tag)
		}
	})
	return i.err
}

// smokeTag names a smoke image after this instance and the deadline past
// which any selfcode instance may reap it: "selfcode-smoke:<instance>.<unix
// deadline>.<random>".
func (m *Manager) smokeTag(deadline time.Time) string {
	if deadline.IsZero() {
		deadline = time.Now().Add(m.opts.Limits.JobTimeout)
	}
	return fmt.Sprintf("%s:%s.%d.%s", SmokeRepository, m.opts.Instance, deadline.Unix(), randomHex(4))
}

// smokeTagLabels reads a smoke image's tag back as the labels a reap
// judges by; ok is false for any other name.
func smokeTagLabels(ref string) (map[string]string, bool) {
	tag, ok := strings.CutPrefix(ref, SmokeRepository+":")
	if !ok {
		return nil, false
	}
	rest, random, ok1 := cutLast(tag, ".")
	instance, deadline, ok2 := cutLast(rest, ".")
	unix, err := strconv.ParseInt(deadline, 10, 64)
	if !ok1 || !ok2 || err != nil || random == "" || !instancePattern.MatchString(instance) {
		return nil, false
	}
	return map[string]string{LabelInstance: instance, LabelDeadline: time.Unix(unix, 0).UTC().Format(time.RFC3339)}, true
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// smokeLabels are the labels of the containers the smoke stage makes
// (shadows and their helpers): those of job containers, so the same reaper
// finds them.
func (m *Manager) smokeLabels(jobID string, deadline time.Time) map[string]string {
	if deadline.IsZero() {
		deadline = time.Now().Add(m.opts.Limits.JobTimeout)
	}
	return map[string]string{
		LabelInstance: m.opts.Instance,
		LabelJob:      jobID,
		LabelDeadline: deadline.UTC().Format(time.RFC3339),
	}
}

// ownedSet holds the names and IDs of the smoke stage's live objects
// (shadow and helper containers, image tags), which a reap leaves alone.
type ownedSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (o *ownedSet) add(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ids == nil {
		o.ids = map[string]bool{}
	}
	o.ids[id] = true
}

func (o *ownedSet) remove(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.ids, id)
}

func (o *ownedSet) has(ids ...string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		if o.ids[id] {
			return true
		}
	}
	return false
}

// reapSmoke removes the smoke stage's images, and networks (which earlier
// versions made for shadow containers), that stale says are leftovers (a
// crashed predecessor's, or past their deadline). Shadow and helper
// containers are job containers to the reaper and already gone.
func (m *Manager) reapSmoke(ctx context.Context, stale func(labels map[string]string, id string) bool, startup bool) (int, error) {
	removed := 0
	nets, err := m.api.NetworkList(ctx, network.ListOptions{Filters: instanceFilter()})
	if err != nil {
		return 0, fmt.Errorf("%w: list networks: %w", ErrEngineUnavailable, err)
	}
	for _, n := range nets {
		if m.owned.has(n.ID) || !stale(n.Labels, n.ID) {
			continue
		}
		err := m.api.NetworkRemove(ctx, n.ID)
		switch {
		case err == nil:
			removed++
			m.log.Info("sandbox reaped network", "network", n.Name, "job_id", n.Labels[LabelJob], "startup", startup)
		case errdefs.IsNotFound(err), errdefs.IsPermissionDenied(err), errdefs.IsConflict(err):
			// Gone, or still has an endpoint (a container being removed).
		default:
			return removed, fmt.Errorf("reap network %s: %w", n.Name, err)
		}
	}
	imgs, err := m.api.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", SmokeRepository+":*"))})
	if err != nil {
		return removed, fmt.Errorf("%w: list images: %w", ErrEngineUnavailable, err)
	}
	for _, img := range imgs {
		var labels map[string]string
		for _, ref := range img.RepoTags {
			if l, ok := smokeTagLabels(ref); ok {
				labels = l
			}
		}
		if labels == nil || m.owned.has(img.RepoTags...) || !stale(labels, img.ID) {
			continue
		}
		// Pruning takes the build's layers under the image too: only
		// parents that no other image, container or name uses go.
		_, err := m.api.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
		switch {
		case err == nil:
			removed++
			m.log.Info("sandbox reaped image", "image", img.RepoTags, "startup", startup)
		case errdefs.IsNotFound(err), errdefs.IsConflict(err):
			// Gone, in use (a container still being removed), or named
			// by someone else too.
		default:
			return removed, fmt.Errorf("reap image %s: %w", img.ID, err)
		}
	}
	return removed, nil
}

// instanceFilter lists what carries selfcode's instance label.
func instanceFilter() filters.Args { return filters.NewArgs(filters.Arg("label", LabelInstance)) }
