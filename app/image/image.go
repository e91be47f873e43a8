package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/docker/docker/client"

	"github.com/selfcode/selfcode/deploy"
)

// Path is how the image came to be on the engine.
type Path string

// The paths.
const (
	// PathPresent: the image was already there; nothing was done.
	PathPresent Path = "present"
	// PathPull: the image's reference names a registry and it was pulled.
	PathPull Path = "pull"
	// PathRegistry: built with docker build from the Dockerfile.
	PathRegistry Path = "registry"
	// PathOffline: built by build-offline.sh (debootstrap → docker import).
	PathOffline Path = "offline"
)

// Mode is which build path Build may take.
type Mode string

// The modes.
const (
	// ModeAuto pulls an image whose reference names a registry, else builds
	// from the Dockerfile when the engine can pull its base images, else
	// builds offline.
	ModeAuto Mode = "auto"
	// ModeRegistry builds from the Dockerfile and fails when the engine
	// cannot pull its base images.
	ModeRegistry Mode = "registry"
	// ModeOffline builds with build-offline.sh.
	ModeOffline Mode = "offline"
)

// Files of the recipe (Options.Recipe).
const (
	Dockerfile    = "Dockerfile"
	OfflineScript = "build-offline.sh"
	WarmScript    = "warm.sh"
)

// ErrMissing: the image is not on the engine (Check).
var ErrMissing = errors.New("sandbox image missing")

// ErrCannotBuild: no path can put the image on this engine.
var ErrCannotBuild = errors.New("cannot build the sandbox image")

// ErrRefused: the engine's API refused a pull probe or a build (403), as a
// restricted socket proxy in front of it does (Compose's docker-proxy).
// The offline build is not tried then: it would run where selfcode runs,
// behind that proxy (in Compose, a non-root container without debootstrap).
// The image has to come from outside: built on the engine's host, or a
// released image named by its registry, which is pulled.
var ErrRefused = errors.New("the Docker engine refuses pulls or builds through this connection (a socket proxy?)")

// Options configure Ensure and Build.
type Options struct {
	// Image is the reference to put on the engine (the configured
	// SELFCODE_SANDBOX_IMAGE). Required.
	Image string
	// Mode limits the paths; default ModeAuto.
	Mode Mode
	// Force rebuilds with the offline script even when the image exists and
	// was built from the same recipe (build-offline.sh --force).
	Force bool
	// Recipe holds Dockerfile, warm.sh and build-offline.sh; default the
	// copy the binary embeds (deploy.SandboxContext).
	Recipe fs.FS
	// BuildArgs are docker build's --build-arg values; they also decide the
	// Dockerfile's base images (BASE_IMAGE, GO_IMAGE point at a mirror).
	BuildArgs map[string]string
	// Progress receives what the build prints: the engine's pull and step
	// output, or the offline script's lines. Nil discards.
	Progress io.Writer
	// Logger receives the decision: which path and why. Nil discards.
	Logger *slog.Logger
	// ProbeTimeout bounds asking the engine whether it can pull one base
	// image; default 30s.
	ProbeTimeout time.Duration
	// Shell runs the offline script; default "bash".
	Shell string
	// Environ is the offline script's environment; default os.Environ().
	// The script's docker CLI is pointed at this Builder's engine with
	// DOCKER_HOST when Environ sets none.
	Environ []string
}

func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = ModeAuto
	}
	if o.Recipe == nil {
		o.Recipe = deploy.SandboxContext()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 30 * time.Second
	}
	if o.Shell == "" {
		o.Shell = "bash"
	}
	return o
}

// Result says what Ensure or Build did.
type Result struct {
	Image  string
	Path   Path
	Reason string // why this path, in words
	ID     string // the image's ID on the engine
}

// Builder puts the sandbox image on one Docker engine.
type Builder struct {
	api  *client.Client
	opts Options
}

// New connects to the engine named by the environment (DOCKER_HOST etc.).
func New(opts Options) (*Builder, error) {
	opts = opts.withDefaults()
	if opts.Image == "" {
		return nil, errors.New("image: no image reference")
	}
	if _, err := reference.ParseNormalizedNamed(opts.Image); err != nil {
		return nil, fmt.Errorf("image: %q is not an image reference: %w", opts.Image, err)
	}
	switch opts.Mode {
	case ModeAuto, ModeRegistry, ModeOffline:
	default:
		return nil, fmt.Errorf("image: unknown mode %q", opts.Mode)
	}
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("create docker client: %w", err)
	}
	return &Builder{api: api, opts: opts}, nil
}

// Close releases the engine connection.
func (b *Builder) Close() error { return b.api.Close() }

// Ensure builds the image only when it is missing from the engine.
func Ensure(ctx context.Context, opts Options) (Result, error) {
	b, err := New(opts)
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	return b.Ensure(ctx)
}

// Build puts the image on the engine now, whether or not it is there.
func Build(ctx context.Context, opts Options) (Result, error) {
	b, err := New(opts)
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	return b.Build(ctx)
}

// Ensure builds the image only when it is missing from the engine.
func (b *Builder) Ensure(ctx context.Context) (Result, error) {
	id, err := b.inspect(ctx, b.opts.Image)
	if err == nil {
		return Result{Image: b.opts.Image, Path: PathPresent, Reason: "already on the engine", ID: id}, nil
	}
	if !errors.Is(err, ErrMissing) {
		return Result{}, err
	}
	return b.Build(ctx)
}

// Build puts the image on the engine by the first path that works (see
// Mode) and says which and why: on the Logger before it starts, and in the
// Result.
func (b *Builder) Build(ctx context.Context) (Result, error) {
	o := b.opts
	res := Result{Image: o.Image}
	var why []string
	if o.Mode == ModeAuto && namesRegistry(o.Image) {
		reason := fmt.Sprintf("%s names a registry", o.Image)
		b.decide(PathPull, reason)
		err := b.pull(ctx, o.Image)
		if err == nil {
			res.Path, res.Reason = PathPull, reason
			return b.done(ctx, res)
		}
		if ctx.Err() != nil || isDigest(o.Image) {
			return res, fmt.Errorf("pull %s: %w", o.Image, err)
		}
		why = append(why, fmt.Sprintf("pulling %s failed (%v)", o.Image, err))
	}
	if o.Mode != ModeOffline {
		bases, probeErr := b.probeBases(ctx)
		switch {
		case probeErr == nil:
			reason := "the engine has or can pull the Dockerfile's base images " + strings.Join(bases, ", ")
			if o.Mode == ModeRegistry {
				reason = "--registry; " + reason
			}
			b.decide(PathRegistry, strings.Join(append(why, reason), "; "))
			if err := b.dockerBuild(ctx); err != nil {
				return res, err
			}
			res.Path, res.Reason = PathRegistry, strings.Join(append(why, reason), "; ")
			return b.done(ctx, res)
		case o.Mode == ModeRegistry || ctx.Err() != nil || errors.Is(probeErr, ErrRefused):
			return res, fmt.Errorf("%w with docker build: %w", ErrCannotBuild, probeErr)
		default:
			why = append(why, probeErr.Error())
		}
	} else {
		why = append(why, "--offline")
	}
	reason := strings.Join(why, "; ")
	if runtime.GOOS != "linux" {
		return res, fmt.Errorf("%w: %s, and the offline build (debootstrap) needs Linux: let the engine reach a registry, or pull a released sandbox image and set SELFCODE_SANDBOX_IMAGE to it", ErrCannotBuild, reason)
	}
	b.decide(PathOffline, reason)
	if err := b.offline(ctx); err != nil {
		return res, err
	}
	res.Path, res.Reason = PathOffline, reason
	return b.done(ctx, res)
}

// decide logs the path about to be taken and why, and prints it.
func (b *Builder) decide(p Path, reason string) {
	o := b.opts
	var how string
	switch p {
	case PathPull:
		how = "pulling it"
	case PathRegistry:
		how = "building it with docker build from deploy/sandbox/Dockerfile"
	case PathOffline:
		how = "building it offline with deploy/sandbox/build-offline.sh (debootstrap → docker import; a few minutes, needs root; nothing to do when it is built from this recipe)"
	}
	o.Logger.Info("sandbox image: "+how, "image", o.Image, "path", string(p), "reason", reason)
	fmt.Fprintf(o.Progress, "==> sandbox image %s: %s, because %s\n", o.Image, how, reason)
}

// done reads the built image's ID.
func (b *Builder) done(ctx context.Context, res Result) (Result, error) {
	id, err := b.inspect(ctx, res.Image)
	if err != nil {
		return res, fmt.Errorf("after the %s build: %w", res.Path, err)
	}
	res.ID = id
	fmt.Fprintf(b.opts.Progress, "==> sandbox image %s is ready (%s)\n", res.Image, shortID(id))
	return res, nil
}

// inspect returns the image's ID, or ErrMissing.
func (b *Builder) inspect(ctx context.Context, ref string) (string, error) {
	img, err := b.api.ImageInspect(ctx, ref)
	if errdefs.IsNotFound(err) {
		return "", fmt.Errorf("%w: %s", ErrMissing, ref)
	}
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return img.ID, nil
}

// namesRegistry reports whether ref names its registry explicitly
// (ghcr.io/…, localhost:5000/…): only then is the image pulled. A short
// name such as selfcode-sandbox:latest is never looked up on Docker Hub,
// where anyone may have published an image under it.
func namesRegistry(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// isDigest reports whether ref pins a digest, which no local build can give.
func isDigest(ref string) bool {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return false
	}
	_, ok := n.(reference.Canonical)
	return ok
}

// recipeHash is the io.selfcode.recipe label of a Dockerfile build: what
// the Dockerfile and warm.sh hash to.
func recipeHash(recipe fs.FS) (string, error) {
	h, err := hashFiles(recipe, "", Dockerfile, WarmScript)
	return "dockerfile-" + h, err
}

// hashFiles is the first 16 hex digits of the SHA-256 of the named files
// of recipe, one after the other, followed by tail.
func hashFiles(recipe fs.FS, tail string, names ...string) (string, error) {
	h := sha256.New()
	for _, name := range names {
		data, err := fs.ReadFile(recipe, name)
		if err != nil {
			return "", fmt.Errorf("read the recipe: %w", err)
		}
		h.Write(data)
	}
	io.WriteString(h, tail)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
