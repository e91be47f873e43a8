package localrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/report"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// Pipeline does the work on the scratch checkout (*pipeline.Pipeline).
type Pipeline interface {
	Run(ctx context.Context, in pipeline.Input) (*pipeline.Output, error)
}

// Options configures Run.
type Options struct {
	RepoDir   string
	Task      string
	Base      string // branch or commit; default: the checked-out branch
	Pipeline  Pipeline
	Templates *templates.Renderer
	Logger    *slog.Logger
	Now       func() time.Time
}

// Result is what a local run produced.
type Result struct {
	Branch   string // "" when nothing changed
	Report   string // Markdown, as a PR body would be
	Verified bool
	JobID    string
}

// Run does one local pipeline run.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if strings.TrimSpace(o.Task) == "" {
		return nil, errs.E(errs.KindInvalid, "--task is empty", nil)
	}
	top, err := git(ctx, o.RepoDir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, errs.E(errs.KindInvalid, fmt.Sprintf("--repo %s is not a git checkout", o.RepoDir), err)
	}
	base := o.Base
	if base == "" {
		base = "HEAD"
	}
	baseSHA, err := git(ctx, top, "rev-parse", "--verify", base+"^{commit}")
	if err != nil {
		return nil, errs.E(errs.KindInvalid, fmt.Sprintf("--base %s is not a commit of %s", base, top), err)
	}
	id := job.NewIDs().New(o.Now())
	branch := "selfcode/local-" + id

	scratch, err := os.MkdirTemp("", "selfcode-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	src := filepath.Join(scratch, "src")
	if _, err := git(ctx, "", "clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", top, src); err != nil {
		return nil, fmt.Errorf("clone %s: %w", top, err)
	}
	if _, err := git(ctx, src, "checkout", "--quiet", "-b", branch, baseSHA); err != nil {
		return nil, fmt.Errorf("check out %s: %w", baseSHA, err)
	}
	cfg, err := ReadConfig(src)
	if err != nil {
		return nil, err
	}
	title := firstLine(o.Task)
	out, runErr := o.Pipeline.Run(ctx, Input(Job{ID: id, Repository: CacheName(top), Task: o.Task, Dir: src, BaseSHA: baseSHA,
		Config: cfg, Logger: o.Logger, Scratch: scratch}))
	if out == nil {
		return nil, runErr
	}
	rep := templates.Report{JobID: id, Repository: filepath.Base(top), IssueTitle: title, Branch: branch,
		State: string(job.StateSucceeded), Outcome: string(job.OutcomeNoChange)}
	report.Fill(&rep, out, cfg)
	res := &Result{Verified: out.Verified && runErr == nil, JobID: id}
	if runErr != nil {
		rep.State, rep.Outcome, rep.Error = string(job.StateFailed), string(job.OutcomeError), runErr.Error()
	}
	if runErr == nil && len(out.Changed) > 0 {
		if _, err := git(ctx, src, "add", "-A"); err != nil {
			return nil, err
		}
		msg := "selfcode: " + title + "\n\n" + strings.TrimSpace(out.Summary) + "\n\nSelfcode-Job: " + id + "\n"
		if _, err := gitEnv(ctx, src, []string{"GIT_AUTHOR_NAME=selfcode", "GIT_AUTHOR_EMAIL=selfcode@localhost",
			"GIT_COMMITTER_NAME=selfcode", "GIT_COMMITTER_EMAIL=selfcode@localhost"}, "commit", "--quiet", "--no-verify", "-m", msg); err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
		if _, err := git(ctx, top, "fetch", "--quiet", "--", src, branch+":"+branch); err != nil {
			return nil, fmt.Errorf("bring branch %s into %s: %w", branch, top, err)
		}
		res.Branch = branch
		rep.Outcome = string(job.OutcomePROpened)
		if !out.Verified {
			rep.State, rep.Outcome, rep.Draft = string(job.StateFailed), string(job.OutcomeVerificationFailed), true
			if out.Verdict == verify.Unverified {
				rep.Outcome = string(job.OutcomeUnverified)
			}
		}
		rep.FilesChanged = append(rep.FilesChanged, changedFiles(ctx, src, baseSHA)...)
	}
	body, err := o.Templates.PRBody(rep)
	if err != nil {
		return nil, fmt.Errorf("render report: %w", err)
	}
	res.Report = body
	return res, runErr
}

// CacheName names the caches (sandbox caches and baselines) of the local
// checkout at top: local/<folder>-<hash of its absolute path>, so that two
// checkouts in folders of the same name never share one and a checkout
// always finds its own. It is an OWNER/NAME, as `selfcode cache list`
// shows it and `selfcode cache clear --repo` takes it.
func CacheName(top string) string {
	abs, err := filepath.Abs(top)
	if err != nil {
		abs = filepath.Clean(top)
	}
	sum := sha256.Sum256([]byte(abs))
	name := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, filepath.Base(abs))
	if len(name) > 40 {
		name = name[:40]
	}
	return "local/" + name + "-" + hex.EncodeToString(sum[:4])
}

// ReadConfig reads the checkout's .selfcode.yml (its defaults when there is
// none), as a local run does.
func ReadConfig(dir string) (*repoconfig.Config, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".selfcode.yml"))
	if errors.Is(err, fs.ErrNotExist) {
		return repoconfig.Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read .selfcode.yml: %w", err)
	}
	cfg, err := repoconfig.Parse(b)
	if err != nil {
		return nil, errs.E(errs.KindInvalid, ".selfcode.yml is invalid", err)
	}
	return cfg, nil
}

// Job is one local pipeline run: a task on a scratch clone (Dir, with its
// .git) at its base commit.
type Job struct {
	ID         string
	Repository string // names the repository's warm sandbox caches
	Task       string
	Dir        string
	BaseSHA    string
	Config     *repoconfig.Config
	Logger     *slog.Logger // stage progress; nil: slog.Default()
	// Scratch is the run's own directory (holding Dir) where the pipeline
	// makes its temporary copies; "": the system's temporary directory.
	Scratch string
}

// Input is the pipeline input of a local run: the task is the issue's
// title (its first line), body and instructions, with no GitHub issue.
func Input(j Job) pipeline.Input {
	log := j.Logger
	if log == nil {
		log = slog.Default()
	}
	return pipeline.Input{JobID: j.ID, Repository: j.Repository, IssueTitle: firstLine(j.Task), IssueBody: j.Task,
		Instructions: j.Task, Dir: j.Dir, BaseSHA: j.BaseSHA, Config: j.Config, Progress: logProgress{log}, Scratch: j.Scratch,
		// Dir is a scratch clone: its own objects hold the base as it was.
		Pristine: func(ctx context.Context, dst string) error {
			return gitops.ExportLocal(ctx, filepath.Join(j.Dir, ".git"), j.BaseSHA, dst)
		}}
}

func changedFiles(ctx context.Context, dir, base string) []templates.FileChange {
	out, err := git(ctx, dir, "diff", "--numstat", base, "HEAD")
	if err != nil {
		return nil
	}
	var fs []templates.FileChange
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		var a, d int
		fmt.Sscan(f[0], &a)
		fmt.Sscan(f[1], &d)
		fs = append(fs, templates.FileChange{Path: f[2], Action: "modified", Added: a, Deleted: d, Binary: f[0] == "-"})
	}
	return fs
}

type logProgress struct{ log *slog.Logger }

func (p logProgress) Stage(name stage.Name, status stage.Status, summary string) {
	p.log.Info("stage", "stage", name, "status", status, "summary", summary)
}
func (p logProgress) Artifact(name string, data []byte) {}

func firstLine(s string) string {
	s = strings.TrimSpace(strings.SplitN(strings.TrimSpace(s), "\n", 2)[0])
	if len(s) > 72 {
		s = s[:71] + "…"
	}
	return s
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitEnv(ctx, dir, nil, args...)
}

// gitEnv runs git hardened as selfcode's server does (gitops.Local): the
// checkout may be anyone's, and its hooks, fsmonitor or filters must not
// run on this machine.
func gitEnv(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	out, err := gitops.Local(ctx, dir, env, args...)
	return strings.TrimSpace(out), err
}
