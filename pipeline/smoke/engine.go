package smoke

import (
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// Engine builds images and runs shadow containers.
type Engine interface {
	// Available returns nil when the stage can run on this engine, or why
	// it cannot (the engine refuses builds, or the server cannot reach a
	// service in a shadow container).
	Available(ctx context.Context) error
	// Snapshot captures the build context of the checkout at dir as it is
	// now (it may change afterwards): the tree without .git and what
	// .dockerignore excludes, with dockerfile (relative to dir). A
	// repository that cannot be built as configured (no Dockerfile, a
	// context too large) gets a *Failure.
	Snapshot(ctx context.Context, dir, dockerfile string) (*Snapshot, error)
	// Build builds the snapshot's image without network and without
	// pulling anything. A build the repository's Dockerfile fails (a step
	// fails, a base image is not on the engine) returns a *Failure with
	// the build log; other errors mean the engine could not build at all.
	Build(ctx context.Context, spec BuildSpec) (Image, error)
	// Start starts a shadow container of an image with no network (its
	// own loopback only); this process reaches the service through
	// Shadow.Dial. An image that cannot start as configured returns a
	// *Failure.
	Start(ctx context.Context, spec RunSpec) (Shadow, error)
}

// ErrEngine marks an error of the engine, not of the repository: a step it
// ends did not run (Shadow.Dial wraps it when it could not ask the
// container at all, as opposed to the service refusing the connection).
var ErrEngine = errors.New("the engine failed")

// Snapshot is a build context kept in a file until Remove.
type Snapshot struct {
	// Path is the tar file of the build context.
	Path string
	// Dockerfile is the Dockerfile's path inside the context.
	Dockerfile string
	// Bases are the images the Dockerfile builds from (FROM, COPY
	// --from), resolved; they must already be on the engine.
	Bases []string
	// Size is the size of the context in bytes.
	Size int64
}

// Remove deletes the snapshot's file.
func (s *Snapshot) Remove() error {
	if s == nil || s.Path == "" {
		return nil
	}
	err := os.Remove(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// BuildSpec is one image build.
type BuildSpec struct {
	JobID    string
	Snapshot *Snapshot
	// Deadline labels what the build leaves behind, for reaping.
	Deadline time.Time
}

// Image is a built image, removed with Remove.
type Image interface {
	Ref() string
	Remove(ctx context.Context) error
}

// RunSpec is one shadow container.
type RunSpec struct {
	JobID    string
	Image    Image
	Port     int
	Env      map[string]string
	ReadOnly bool
	// Deadline labels the container (and whatever the engine starts
	// beside it, a helper), for reaping.
	Deadline time.Time
}

// Shadow is a running shadow container.
type Shadow interface {
	// URL is the service's base URL as requests name it
	// ("http://localhost:8080"); they go over connections from Dial.
	URL() string
	// Dial opens a connection to the service's port in the container. A
	// *Failure says the service cannot be reached as configured (it
	// listens on its loopback only, say): the stage fails at once.
	Dial(ctx context.Context) (net.Conn, error)
	// State says whether the container still runs, and how it ended.
	State(ctx context.Context) (State, error)
	// Logs returns the container's last lines of output.
	Logs(ctx context.Context, lines int) (string, error)
	// Close removes the container and whatever the engine started
	// beside it (a helper).
	Close(ctx context.Context) error
}

// State is a shadow container's state.
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
}

// Failure is a smoke step the repository's own files fail (as opposed to
// the engine failing): the step counts as failed, with Reason and Log
// shown.
type Failure struct {
	Reason string
	// Log is the build log (or other output) leading to the failure.
	Log string
}

func (f *Failure) Error() string { return f.Reason }
