//go:build selfcode_testhooks

package main

// Test hooks: a binary built with -tags selfcode_testhooks runs jobs with a
// recording runner instead of the pipeline, so process-level tests (crash,
// restart, burst) can drive the real server. Never part of a release build.
//
//	SELFCODE_TEST_RUNS  file the runner appends "start <id> <attempt>" and
//	                    "finish <id>" lines to (fsynced)
//	SELFCODE_TEST_GATE  when set, a run waits until this file exists
//	SELFCODE_TEST_DENY  comma-separated senders treated as read-only
//
// and puts a missing sandbox image on the engine from another recipe, so
// tests choose the path (demo, run, serve, image build):
//
//	SELFCODE_TEST_SANDBOX_RECIPE      directory whose Dockerfile, warm.sh and
//	                                  build-offline.sh replace the carried ones
//	SELFCODE_TEST_SANDBOX_BUILD_ARGS  space-separated NAME=VALUE docker build
//	                                  arguments (the Dockerfile's base images)

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/image"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/app/worker"
)

func testParts(cfg *config.Config, log *slog.Logger) *server.Parts {
	runs := os.Getenv("SELFCODE_TEST_RUNS")
	if runs == "" {
		return nil
	}
	rec := &recorder{path: runs, gate: os.Getenv("SELFCODE_TEST_GATE"), deny: map[string]bool{}}
	for _, s := range strings.Split(os.Getenv("SELFCODE_TEST_DENY"), ",") {
		if s != "" {
			rec.deny[s] = true
		}
	}
	log.Warn("test hooks active: jobs run with the recording runner, not the pipeline")
	return &server.Parts{Runner: rec, Permissions: rec, Notifier: rec}
}

type recorder struct {
	mu   sync.Mutex
	path string
	gate string
	deny map[string]bool
}

func (r *recorder) line(format string, a ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, format+"\n", a...); err != nil {
		return err
	}
	return f.Sync()
}

func (r *recorder) Run(ctx context.Context, j *job.Job, rt worker.Runtime) (job.Outcome, error) {
	if err := r.line("start %s %d", j.ID, j.Attempts); err != nil {
		return "", err
	}
	if r.gate != "" {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if _, err := os.Stat(r.gate); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-t.C:
			}
		}
	}
	if err := r.line("finish %s", j.ID); err != nil {
		return "", err
	}
	return job.OutcomeNoChange, nil
}

func (r *recorder) Allowed(ctx context.Context, j *job.Job) (bool, string, error) {
	if r.deny[j.Trigger.Sender] {
		return false, "read", nil
	}
	return true, "write", nil
}

func (r *recorder) Denied(ctx context.Context, j *job.Job, perm string) error {
	return r.line("denied %s %s", j.ID, j.Trigger.Sender)
}

func (r *recorder) Control(ctx context.Context, j *job.Job, c worker.ControlReply) error {
	return r.line("reply %s %s", j.ID, c.Verb)
}

func testImage(o *image.Options) {
	if dir := os.Getenv("SELFCODE_TEST_SANDBOX_RECIPE"); dir != "" {
		o.Recipe = os.DirFS(dir)
	}
	args, err := buildArgs(strings.Fields(os.Getenv("SELFCODE_TEST_SANDBOX_BUILD_ARGS")))
	if err != nil {
		panic("SELFCODE_TEST_SANDBOX_BUILD_ARGS: " + err.Error())
	}
	if len(args) > 0 {
		o.BuildArgs = args
	}
}
