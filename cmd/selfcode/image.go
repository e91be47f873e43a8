package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/image"
)

func imageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Build the sandbox image (SELFCODE_SANDBOX_IMAGE)",
		Args:  cobra.NoArgs,
	}
	build := &cobra.Command{
		Use:   "build [--offline|--registry] [--image NAME:TAG] [--build-arg NAME=VALUE]...",
		Short: "Put the sandbox image on the Docker engine now, with progress",
		Long: `build puts the sandbox image on the engine by the first way that works here,
and says which and why:

  - pulled, when the image's reference names a registry (a released image,
    e.g. ghcr.io/selfcode/selfcode-sandbox:v1.0.0);
  - docker build from deploy/sandbox/Dockerfile, when the engine has or can
    pull the Dockerfile's base images (debian:bookworm-slim, golang);
  - the offline build (deploy/sandbox/build-offline.sh: debootstrap from this
    machine's apt mirror, then docker import; Linux and root), otherwise.

--registry and --offline choose one of the two builds. The recipes are built
into the binary: no checkout is needed. demo, run and serve do the same on
their own when the image is missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			f := cmd.Flags()
			offline, _ := f.GetBool("offline")
			registry, _ := f.GetBool("registry")
			force, _ := f.GetBool("force")
			o, err := imageFlags(cmd, cfg)
			if err != nil {
				return err
			}
			o.Force = force
			switch {
			case offline && registry:
				return &exitError{code: 2, err: errors.New("--offline and --registry exclude each other")}
			case offline:
				o.Mode = image.ModeOffline
			case registry:
				o.Mode = image.ModeRegistry
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			res, err := image.Build(ctx, o)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s)\n", res.Image, res.Path, res.ID)
			return nil
		},
	}
	f := build.Flags()
	f.Bool("offline", false, "build offline (debootstrap → docker import) even when a registry is reachable")
	f.Bool("registry", false, "build with docker build from the Dockerfile; fail when the engine cannot pull its base images")
	f.Bool("force", false, "offline: rebuild even when the image was built from the same recipe")
	imageTargetFlags(build)

	ensure := &cobra.Command{
		Use:   "ensure [--if-reachable] [--image NAME:TAG] [--build-arg NAME=VALUE]...",
		Short: "Make sure the sandbox image is on the Docker engine and built from the current recipe",
		Long: `ensure does nothing when the sandbox image is on the engine and was built from
the recipe this binary carries (by docker build or by the offline build: the
image's io.selfcode.recipe label says which recipe), or when it is a released
image (its reference names a registry) already there. Otherwise it builds it
as build does, by the first way that works here: docker build when the engine
can pull the Dockerfile's base images, the offline build otherwise.

The engine is the one the environment names (DOCKER_HOST and the like), as
for every selfcode command; the docker CLI's contexts play no part. With
--if-reachable an engine that does not answer is said and is no error (make
sandbox-image, before the tests, which then skip what needs Docker).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			ifReachable, _ := cmd.Flags().GetBool("if-reachable")
			o, err := imageFlags(cmd, cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			b, err := image.New(o)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer b.Close()
			if err := b.Ping(ctx); err != nil {
				if ifReachable && errors.Is(err, image.ErrNoEngine) {
					fmt.Fprintf(cmd.OutOrStdout(), "Docker not reachable (%v): the sandbox image is not checked, and sandbox tests will skip\n", err)
					return nil
				}
				return &exitError{code: 1, err: err}
			}
			res, err := b.EnsureCurrent(ctx)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s)\n", res.Image, res.Path, res.ID)
			return nil
		},
	}
	ensure.Flags().Bool("if-reachable", false, "when the Docker engine does not answer, say so and exit 0")
	imageTargetFlags(ensure)
	c.AddCommand(build, ensure)
	return c
}

// imageTargetFlags adds the flags that choose the image and its build
// arguments.
func imageTargetFlags(c *cobra.Command) {
	f := c.Flags()
	f.String("image", "", "the image (default SELFCODE_SANDBOX_IMAGE)")
	f.StringArray("build-arg", nil, "docker build argument NAME=VALUE, e.g. BASE_IMAGE=mirror.example/debian:bookworm-slim")
}

// imageFlags are the image options of the configuration with
// imageTargetFlags applied, in ModeAuto, with progress on the command's
// output.
func imageFlags(cmd *cobra.Command, cfg *config.Config) (image.Options, error) {
	f := cmd.Flags()
	ref, _ := f.GetString("image")
	pairs, _ := f.GetStringArray("build-arg")
	o := imageOptions(cfg)
	o.Mode, o.Progress = image.ModeAuto, cmd.OutOrStdout()
	if ref != "" {
		o.Image = ref
	}
	args, err := buildArgs(pairs)
	if err != nil {
		return o, &exitError{code: 2, err: err}
	}
	if len(args) > 0 {
		o.BuildArgs = args
	}
	return o, nil
}

func buildArgs(pairs []string) (map[string]string, error) {
	args := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--build-arg %q: want NAME=VALUE", p)
		}
		args[k] = v
	}
	return args, nil
}

// imageOptions is how demo, run, eval, serve and image build put the
// configured sandbox image on the engine: with the recipe the binary
// carries, unless a test-hooks binary is told otherwise (testImage).
func imageOptions(cfg *config.Config) image.Options {
	o := image.Options{Image: cfg.SandboxImage}
	testImage(&o)
	return o
}

// ensureImage builds the sandbox image when it is missing, saying how and
// why, with the build's progress on out.
func ensureImage(ctx context.Context, cfg *config.Config, out io.Writer) error {
	o := imageOptions(cfg)
	o.Progress = out
	_, err := image.Ensure(ctx, o)
	return err
}
