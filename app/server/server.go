package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/selfcode/selfcode/app/budget"
	"github.com/selfcode/selfcode/app/config"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/image"
	"github.com/selfcode/selfcode/app/intake"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/overnight"
	"github.com/selfcode/selfcode/app/runner"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/app/worker"
	"github.com/selfcode/selfcode/handlers"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
)

// Options configures a Server. serve passes the configuration only; the
// demo passes a configuration pointing at the simulated GitHub and the
// recorded model; tests add the fields below.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// Parts, when set, replaces the runner, permission checker and notifier
	// built from the configuration (the test-hooks binary's recorders).
	Parts *Parts
	// Pipeline, when set, replaces the pipeline built from the
	// configuration, and no sandbox is started (tests script the work).
	Pipeline runner.Pipeline
	// Sandbox, when set (and Pipeline is not), is the sandbox backend of
	// the real pipeline instead of Docker (tests of the job path that do
	// not verify).
	Sandbox pipeline.Sandbox
	// GitHub adjusts the GitHub client factory's options (tests shorten
	// backoffs).
	GitHub func(*gh.Options)
	// Now is the clock of the store, intake and overnight scheduler; default
	// time.Now (tests move a fake clock through a window).
	Now func() time.Time
	// Tick is how often workers and the overnight scheduler look for due
	// work; default 1s (workers) and 10s (scheduler).
	Tick time.Duration
	// ReportBackoff is the first wait between morning report deliveries;
	// default 2s.
	ReportBackoff time.Duration
	// SandboxManager, when set, is the sandbox manager whose containers
	// the server's reaper watches (tests that script the pipeline start
	// containers on one); nil: the one built from the configuration, or
	// none when Pipeline is set.
	SandboxManager *sandbox.Manager
	// ReapInterval is how often the sandbox reaper removes the containers
	// of jobs that no longer run; default one minute.
	ReapInterval time.Duration
	// BuildImage (serve) builds the sandbox image in the background when it
	// is missing (app/image: pulled, docker build, or offline; the log says
	// which and why). Deliveries are taken meanwhile; jobs wait, queued,
	// until the build has ended. Only with the sandbox built from the
	// configuration (no Parts, no Pipeline).
	BuildImage bool
	// Image is how BuildImage builds: the recipe and docker build
	// arguments (zero: the recipe the binary carries, with the Dockerfile's
	// own base images). Its Image, Logger and Progress are the server's:
	// the configured sandbox image and the server's log.
	Image image.Options
}

// Server is a running selfcode.
type Server struct {
	cfg      *config.Config
	log      *slog.Logger
	Store    *store.Store
	Metrics  *metrics.Metrics
	Pool     *worker.Pool
	Instance string
	// Overnight runs the overnight windows and morning reports.
	Overnight *overnight.Scheduler

	enabled atomic.Bool // the kill switch, changeable at run time
	// imageWait is set while the sandbox image is being built: jobs wait.
	imageWait  atomic.Bool
	buildImage bool          // Run builds the sandbox image when missing
	imageOpts  image.Options // how (Options.Image)
	imageDone  chan struct{} // closed when that build has ended

	model     chat.Model            // the one model client
	budget    *budget.Budget        // the daily budgets (built after the parts; jobs use it once running)
	ready     []handlers.ReadyCheck // beside the store's
	caches    handlers.CacheAdmin   // the repositories' caches (sandbox volumes, baselines), for the dashboard (nil: none)
	sandbox   *sandbox.Manager      // reaped every reapEvery while the server runs (nil: none)
	reapEvery time.Duration
	closers   []func() error // run after the store closes (the sandbox manager)

	public, admin     *http.Server
	publicLn, adminLn net.Listener
}

// New opens the store and builds every part; Run serves.
func New(ctx context.Context, o Options) (*Server, error) {
	cfg := o.Config
	if err := cfg.ValidateServe(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	st, err := store.Open(store.Options{Path: filepath.Join(cfg.DataDir, "selfcode.db"), Now: o.Now})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, Store: st, sandbox: o.SandboxManager, reapEvery: o.ReapInterval}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	if s.Instance, err = st.InstanceID(); err != nil {
		return nil, fmt.Errorf("instance id: %w", err)
	}
	s.Metrics = metrics.New(metrics.Options{Stats: st})
	if s.model, err = Model(cfg, log); err != nil {
		return nil, err
	}
	parts, err := s.parts(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("build the job parts: %w", err)
	}
	s.buildImage = o.BuildImage && o.Parts == nil && o.Pipeline == nil
	s.imageOpts = o.Image
	s.imageWait.Store(s.buildImage) // from now until Run's build has ended

	windows := overnight.Windows{Schedule: cfg.Schedule(), Length: cfg.OvernightWindow}
	router := intake.New(intake.Options{
		CommandWord: cfg.Command, Label: cfg.Label, OvernightLabel: cfg.OvernightLabel, CIApps: cfg.CIAppSlugs(),
		NextWindow: windows.Next, Now: st.Now,
	})
	ready := append([]handlers.ReadyCheck{{Name: "store", Check: func(ctx context.Context) error { return st.Ping() }}}, s.ready...)
	pub, err := handlers.NewPublic(handlers.PublicOptions{
		Webhook: handlers.WebhookOptions{Secret: []byte(cfg.WebhookSecret), Router: router, Store: st,
			Observer: s.Metrics, Logger: log},
		Ready: ready,
	})
	if err != nil {
		return nil, err
	}
	s.enabled.Store(cfg.Enabled)
	hooks, err := s.overnight(parts, windows, o)
	if err != nil {
		return nil, err
	}
	s.Pool, err = worker.New(worker.Options{
		Store: st, Runner: parts.Runner, Permissions: parts.Permissions, Notifier: parts.Notifier,
		Observer: s.Metrics, Workers: cfg.Workers, Instance: s.Instance, Logger: log,
		Enabled: s.jobsMayStart, Tick: o.Tick, Hold: parts.Hold,
		Promote: s.Overnight.Promote, Admit: hooks.admit, Finished: hooks.finished,
		OvernightMaxDuration: cfg.OvernightMaxDuration, PublishGrace: cfg.PublishGrace,
		// Until a job's runner reads its repository's limits.job_timeout.
		JobTimeout: repoconfig.Default().Limits.JobTimeout,
	})
	if err != nil {
		return nil, err
	}
	adm, err := handlers.NewAdmin(handlers.AdminOptions{Jobs: st, Canceler: st, Metrics: s.Metrics.Handler(), Logger: log,
		Reports: st, Switch: s, Caches: s.caches})
	if err != nil {
		return nil, err
	}
	if s.publicLn, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen on SELFCODE_ADDR %s: %w", cfg.Addr, err)
	}
	if s.adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
		s.publicLn.Close()
		return nil, fmt.Errorf("listen on SELFCODE_ADMIN_ADDR %s: %w", cfg.AdminAddr, err)
	}
	s.public = &http.Server{Handler: pub, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second}
	s.admin = &http.Server{Handler: adm, ReadHeaderTimeout: 10 * time.Second}
	ok = true
	return s, nil
}

// PublicAddr and AdminAddr are the bound addresses (useful with port 0).
func (s *Server) PublicAddr() string { return s.publicLn.Addr().String() }

// AdminAddr is the bound admin address.
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// Run starts the workers and both listeners and blocks until ctx is done,
// then shuts down gracefully: stop taking deliveries, let running jobs finish
// up to the shutdown timeout, close the store.
func (s *Server) Run(ctx context.Context) error {
	if s.buildImage {
		s.imageWait.Store(true)
		s.imageDone = make(chan struct{})
		go func() { defer close(s.imageDone); s.ensureImage(ctx) }()
	}
	if err := s.Pool.Start(ctx); err != nil {
		return err
	}
	octx, stopOvernight := context.WithCancel(context.Background())
	overnightDone := make(chan struct{})
	go func() { s.Overnight.Run(octx); close(overnightDone) }()
	reaperDone := make(chan struct{})
	go func() {
		defer close(reaperDone)
		if s.sandbox != nil {
			s.sandbox.RunReaper(octx, sandbox.ReaperOptions{Interval: s.reapEvery, Jobs: runningJobs{s.Store}, Observer: s.Metrics})
		}
	}()
	errc := make(chan error, 2)
	serve := func(srv *http.Server, ln net.Listener, name string) {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s listener: %w", name, err)
		}
	}
	go serve(s.public, s.publicLn, "public")
	go serve(s.admin, s.adminLn, "admin")
	s.log.Info("selfcode serving", "addr", s.PublicAddr(), "admin_addr", s.AdminAddr(), "instance", s.Instance,
		"workers", s.cfg.Workers, "enabled", s.Enabled())
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	_ = s.public.Shutdown(sctx)
	if err := s.Pool.Shutdown(sctx); err != nil {
		s.log.Warn("shutdown interrupted running jobs; they run again after restart", "err", err)
	}
	stopOvernight()
	<-overnightDone
	<-reaperDone
	if s.imageDone != nil {
		<-s.imageDone
	}
	_ = s.admin.Shutdown(sctx)
	if err := s.close(); err != nil && runErr == nil {
		runErr = err
	}
	s.log.Info("stopped")
	return runErr
}

// close closes the store, then what the parts opened.
func (s *Server) close() error {
	err := s.Store.Close()
	if err != nil {
		err = fmt.Errorf("close store: %w", err)
	}
	for _, c := range s.closers {
		if cerr := c(); cerr != nil {
			s.log.Warn("close", "err", cerr)
		}
	}
	return err
}
