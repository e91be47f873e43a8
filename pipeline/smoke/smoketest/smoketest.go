// Package smoketest is a smoke.Engine for tests without Docker: it builds
// nothing, and its shadow "container" is an httptest server whose handler
// the test chooses for each build context.
package smoketest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/selfcode/selfcode/pipeline/smoke"
)

// Engine is a fake smoke.Engine. Set its fields before use.
type Engine struct {
	// Serve makes the handler that answers for the shadow of an image
	// built from dir; it is called as the build context is taken, so the
	// "image" holds dir as it was then.
	Serve func(dir string) http.Handler
	// OnSnapshot, when set, is called with the directory as its context is
	// taken.
	OnSnapshot func(dir string)
	// Unavailable, BuildErr, StartErr and DialErr are what Available,
	// Build, Start and a shadow's Dial fail with; BuildFor makes builds
	// take that long.
	Unavailable, BuildErr, StartErr, DialErr error
	BuildFor                                 time.Duration
	// State, when set, is the shadow's state (default: running).
	State func() smoke.State
	// Logs are the shadow's log lines.
	Logs string

	mu       sync.Mutex
	images   map[string]http.Handler // snapshot file → what its image serves
	snaps    []string
	builds   int
	removed  int
	closed   int
	lastSpec smoke.RunSpec
}

var _ smoke.Engine = (*Engine)(nil)

// Available fails with Unavailable.
func (e *Engine) Available(context.Context) error { return e.Unavailable }

// Snapshot notes dir in a temporary file (which Run removes).
func (e *Engine) Snapshot(_ context.Context, dir, dockerfile string) (*smoke.Snapshot, error) {
	if e.OnSnapshot != nil {
		e.OnSnapshot(dir)
	}
	var h http.Handler = http.NotFoundHandler()
	if e.Serve != nil {
		h = e.Serve(dir)
	}
	f, err := os.CreateTemp("", "smoketest-*.tar")
	if err != nil {
		return nil, err
	}
	f.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.images == nil {
		e.images = map[string]http.Handler{}
	}
	e.images[f.Name()] = h
	e.snaps = append(e.snaps, dir)
	return &smoke.Snapshot{Path: f.Name(), Dockerfile: dockerfile}, nil
}

// Build "builds" the snapshot.
func (e *Engine) Build(ctx context.Context, spec smoke.BuildSpec) (smoke.Image, error) {
	if e.BuildFor > 0 {
		select {
		case <-time.After(e.BuildFor):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.builds++
	if e.BuildErr != nil {
		return nil, e.BuildErr
	}
	return &image{e: e, ref: "smoketest:" + spec.Snapshot.Path, serve: e.images[spec.Snapshot.Path]}, nil
}

// Start serves what the image holds.
func (e *Engine) Start(_ context.Context, spec smoke.RunSpec) (smoke.Shadow, error) {
	e.mu.Lock()
	e.lastSpec = spec
	e.mu.Unlock()
	if e.StartErr != nil {
		return nil, e.StartErr
	}
	return &shadow{e: e, srv: httptest.NewServer(spec.Image.(*image).serve)}, nil
}

// Snapshots are the directories whose contexts were taken, in order.
func (e *Engine) Snapshots() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.snaps...)
}

// Counts says how many images were built and removed, and how many
// shadows were closed.
func (e *Engine) Counts() (builds, removed, closed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.builds, e.removed, e.closed
}

// LastRun is the spec of the last shadow started.
func (e *Engine) LastRun() smoke.RunSpec {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastSpec
}

type image struct {
	e     *Engine
	ref   string
	serve http.Handler
}

func (i *image) Ref() string { return i.ref }

func (i *image) Remove(context.Context) error {
	i.e.mu.Lock()
	defer i.e.mu.Unlock()
	i.e.removed++
	return nil
}

type shadow struct {
	e    *Engine
	srv  *httptest.Server
	once sync.Once
}

func (s *shadow) URL() string { return s.srv.URL }

// Dial connects to the httptest server.
func (s *shadow) Dial(ctx context.Context) (net.Conn, error) {
	if s.e.DialErr != nil {
		return nil, s.e.DialErr
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.srv.Listener.Addr().String())
}

func (s *shadow) State(context.Context) (smoke.State, error) {
	if s.e.State != nil {
		return s.e.State(), nil
	}
	return smoke.State{Running: true}, nil
}

func (s *shadow) Logs(context.Context, int) (string, error) { return s.e.Logs, nil }

func (s *shadow) Close(context.Context) error {
	s.once.Do(func() {
		s.srv.Close()
		s.e.mu.Lock()
		s.e.closed++
		s.e.mu.Unlock()
	})
	return nil
}
