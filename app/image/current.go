package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"
)

// RecipeLabel is the image label naming the recipe an image was built
// from: "dockerfile-<hash>" for docker build, the offline script's hash for
// build-offline.sh.
const RecipeLabel = "io.selfcode.recipe"

// ErrNoEngine: the Docker engine the environment names does not answer.
var ErrNoEngine = errors.New("the Docker engine is not reachable")

// Ping checks that the engine answers, through the same client (the
// environment's DOCKER_HOST and the like; not the docker CLI's contexts)
// that inspects and builds the image.
func (b *Builder) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := b.api.Ping(ctx); err != nil {
		return fmt.Errorf("%w at %s: %w", ErrNoEngine, b.api.DaemonHost(), err)
	}
	return nil
}

// EnsureCurrent makes sure the image is on the engine and built from the
// current recipe (see Builder.EnsureCurrent).
func EnsureCurrent(ctx context.Context, opts Options) (Result, error) {
	b, err := New(opts)
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	return b.EnsureCurrent(ctx)
}

// EnsureCurrent makes sure the image is on the engine and built from the
// current recipe: nothing is done when it is there with either build's
// recipe label (current); otherwise Build puts it there by the first path
// that works (with ModeAuto: pulled when its reference names a registry,
// docker build when the engine can pull the Dockerfile's base images,
// offline otherwise). An image whose reference names a registry is a
// released one: present is current.
func (b *Builder) EnsureCurrent(ctx context.Context) (Result, error) {
	o := b.opts
	img, err := b.api.ImageInspect(ctx, o.Image)
	switch {
	case errdefs.IsNotFound(err):
		fmt.Fprintf(o.Progress, "==> sandbox image %s is not on the engine\n", o.Image)
		return b.Build(ctx)
	case err != nil:
		return Result{}, fmt.Errorf("inspect image %s: %w", o.Image, err)
	}
	var label string
	if img.Config != nil {
		label = img.Config.Labels[RecipeLabel]
	}
	res := Result{Image: o.Image, Path: PathPresent, ID: img.ID}
	if namesRegistry(o.Image) {
		res.Reason = "already on the engine (a released image)"
	} else {
		current, err := b.current(ctx, label)
		if err != nil {
			return res, err
		}
		if !current {
			fmt.Fprintf(o.Progress, "==> sandbox image %s was built from recipe %q, not from this one: rebuilding it\n", o.Image, label)
			return b.Build(ctx)
		}
		res.Reason = "already on the engine, built from this recipe (" + label + ")"
	}
	o.Logger.Info("sandbox image: nothing to do", "image", o.Image, "path", string(PathPresent), "reason", res.Reason)
	fmt.Fprintf(o.Progress, "==> sandbox image %s is %s; nothing to do\n", o.Image, res.Reason)
	return res, nil
}

// current reports whether label is the recipe label of an image built
// from this recipe: the Dockerfile build's, or build-offline.sh's. The
// offline label hashes in the Go toolchain the script would copy into the
// image; on a machine without one, only the Dockerfile build's counts (the
// script could not build here either).
func (b *Builder) current(ctx context.Context, label string) (bool, error) {
	labels, err := b.recipeLabels(ctx)
	return slices.Contains(labels, label), err
}

// recipeLabels are the labels an image built from this recipe carries.
func (b *Builder) recipeLabels(ctx context.Context) ([]string, error) {
	docker, err := recipeHash(b.opts.Recipe)
	if err != nil {
		return nil, err
	}
	labels := []string{docker}
	version, err := b.goVersion(ctx)
	if err != nil {
		b.opts.Logger.Debug("sandbox image: no Go toolchain, so no offline recipe to compare with", "err", err)
		return labels, nil
	}
	offline, err := offlineRecipe(b.opts, version)
	if err != nil {
		return nil, err
	}
	return append(labels, offline), nil
}

// offlineRecipe is the label build-offline.sh gives an image it builds
// with the Go toolchain of goVersion: the hash of the script, warm.sh and
// that version, as the script computes it (`(cat "$0" "$warm"; echo
// "$goversion") | sha256sum | cut -c1-16`).
func offlineRecipe(o Options, goVersion string) (string, error) {
	return hashFiles(o.Recipe, goVersion+"\n", OfflineScript, WarmScript)
}

// goVersion is the version of the Go toolchain build-offline.sh copies into
// the image, found as the script finds it: $GOROOT's, else the root the go
// on PATH names, else /usr/local/go.
func (b *Builder) goVersion(ctx context.Context) (string, error) {
	goroot := getenv(b.environ(), "GOROOT")
	if goroot == "" {
		goroot = "/usr/local/go"
		if path, err := exec.LookPath("go"); err == nil {
			out, err := b.goEnv(ctx, path, "GOROOT")
			if err != nil {
				return "", err
			}
			goroot = out
		}
	}
	return b.goEnv(ctx, filepath.Join(goroot, "bin", "go"), "GOVERSION")
}

// goEnv runs `go env name` with the script's environment.
func (b *Builder) goEnv(ctx context.Context, goBin, name string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, "env", name)
	cmd.Env = b.environ()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s env %s: %w", goBin, name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// environ is the offline script's environment: Options.Environ (default
// this process's).
func (b *Builder) environ() []string {
	if b.opts.Environ != nil {
		return b.opts.Environ
	}
	return os.Environ()
}

// scriptEnviron is environ with DOCKER_HOST naming the engine this Builder
// talks to, when it names none: the script's docker CLI would otherwise
// follow its current context, which may be another engine than the one
// whose image is inspected.
func (b *Builder) scriptEnviron() []string {
	env := b.environ()
	if getenv(env, "DOCKER_HOST") != "" {
		return env
	}
	return append(slices.Clip(env), "DOCKER_HOST="+b.api.DaemonHost())
}

// getenv is the value of key in env (the last one, as exec takes it).
func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
