package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	dimage "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/moby/term"

	"github.com/selfcode/selfcode/internal/dockerfile"
)

// probeBases checks that the engine has, or can pull, every base image of
// the Dockerfile. It asks the registry for each missing one's manifest
// (GET /distribution/…/json), which fails at once when the engine reaches
// no registry, and returns the bases.
func (b *Builder) probeBases(ctx context.Context) ([]string, error) {
	df, err := fs.ReadFile(b.opts.Recipe, Dockerfile)
	if err != nil {
		return nil, fmt.Errorf("read the recipe: %w", err)
	}
	bases, err := dockerfile.BaseImages(df, b.opts.BuildArgs)
	if err != nil {
		return nil, err
	}
	for _, ref := range bases {
		if _, err := b.inspect(ctx, ref); err == nil {
			continue
		} else if !errors.Is(err, ErrMissing) {
			return nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, b.opts.ProbeTimeout)
		_, err := b.api.DistributionInspect(pctx, ref, "")
		cancel()
		if errdefs.IsPermissionDenied(err) {
			return nil, fmt.Errorf("%w: asking whether it can pull the base image %s: %w", ErrRefused, ref, err)
		}
		if err != nil {
			return nil, fmt.Errorf("the engine cannot pull the base image %s: %w", ref, err)
		}
	}
	return bases, nil
}

// pull pulls ref with the engine's progress on Progress.
func (b *Builder) pull(ctx context.Context, ref string) error {
	body, err := b.api.ImagePull(ctx, ref, dimage.PullOptions{})
	if err != nil {
		return err
	}
	defer body.Close()
	return b.display(body)
}

// dockerBuild runs docker build on the recipe with the classic builder
// (BuildKit needs a session the API alone does not give), tagging Image.
func (b *Builder) dockerBuild(ctx context.Context) error {
	recipe, err := recipeHash(b.opts.Recipe)
	if err != nil {
		return err
	}
	args := map[string]*string{"RECIPE": &recipe}
	for k, v := range maps.All(b.opts.BuildArgs) {
		args[k] = &v
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarFS(pw, b.opts.Recipe)) }()
	defer pr.Close()
	resp, err := b.api.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{b.opts.Image},
		Dockerfile:  Dockerfile,
		BuildArgs:   args,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if errdefs.IsPermissionDenied(err) {
		return fmt.Errorf("%w: docker build %s: %w", ErrRefused, b.opts.Image, err)
	}
	if err != nil {
		return fmt.Errorf("docker build %s: %w", b.opts.Image, err)
	}
	defer resp.Body.Close()
	if err := b.display(resp.Body); err != nil {
		return fmt.Errorf("docker build %s: %w", b.opts.Image, err)
	}
	return nil
}

// display renders the engine's JSON progress stream on Progress (with
// progress bars on a terminal) and returns the error the stream reports.
func (b *Builder) display(r io.Reader) error {
	fd, isTerm := term.GetFdInfo(b.opts.Progress)
	return jsonmessage.DisplayJSONMessagesStream(r, b.opts.Progress, fd, isTerm, nil)
}

// tarFS writes the files of fsys as a tar archive: the build context.
func tarFS(w io.Writer, fsys fs.FS) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: p, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if d, err := fs.Stat(fsys, p); err == nil && d.Mode()&0o111 != 0 {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
