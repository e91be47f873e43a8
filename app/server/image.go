package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/selfcode/selfcode/app/image"
)

// jobsMayStart gates the workers' pipeline jobs: the kill switch, and the
// sandbox image while it is being built.
func (s *Server) jobsMayStart() bool { return s.Enabled() && !s.imageWait.Load() }

// ensureImage builds the sandbox image when it is missing and then lets
// jobs start, whether or not the build worked: a job that then finds no
// image fails with an error naming the fix, which beats waiting forever.
func (s *Server) ensureImage(ctx context.Context) {
	defer s.imageWait.Store(false)
	progress := &logLines{log: s.log, msg: "sandbox image build"}
	o := s.imageOpts
	o.Image, o.Logger, o.Progress = s.cfg.SandboxImage, s.log, progress
	res, err := image.Ensure(ctx, o)
	progress.flush()
	switch {
	case err != nil && ctx.Err() != nil:
		s.log.Warn("sandbox image build stopped by shutdown", "image", s.cfg.SandboxImage, "err", err)
	case errors.Is(err, image.ErrRefused):
		s.log.Error("sandbox image build refused by the Docker engine; jobs will fail until the image is there", "image", s.cfg.SandboxImage, "err", err,
			"fix", "serve reaches the engine through a socket proxy that allows no pulls or builds (Compose's docker-proxy): on the engine's host run `selfcode image build` (SELFCODE_SANDBOX_IMAGE="+s.cfg.SandboxImage+"), or set SELFCODE_SANDBOX_IMAGE to a released sandbox image (ghcr.io/selfcode/selfcode-sandbox:<version>), which serve pulls through the proxy; then restart serve")
	case err != nil:
		s.log.Error("sandbox image build failed; jobs will fail until the image is there", "image", s.cfg.SandboxImage, "err", err,
			"fix", "run `selfcode image build` (or pull a released sandbox image and set SELFCODE_SANDBOX_IMAGE to it); `selfcode doctor` checks the engine")
	case res.Path != image.PathPresent:
		s.log.Info("sandbox image ready", "image", res.Image, "path", string(res.Path), "reason", res.Reason, "id", res.ID)
	}
}

// logLines writes each line written to it as one log record.
type logLines struct {
	log *slog.Logger
	msg string
	mu  sync.Mutex
	buf []byte
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexAny(l.buf, "\r\n")
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(l.buf[:i]); len(line) > 0 {
			l.log.Info(l.msg, "line", string(line))
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *logLines) flush() { _, _ = l.Write([]byte("\n")) }
