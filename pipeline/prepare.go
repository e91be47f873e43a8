package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// preparation is the job's sandbox made ready while the model plans and
// edits: the container starts from the pristine checkout, setup (the only
// step that may have network) runs, the network is dropped, and the base
// commit is verified or its verification loaded from the cache. Edits wait
// only until the pristine checkout is copied in; syntax checks and
// verification wait for all of it. A failing setup step is not an error:
// it is recorded, the verify commands are skipped, and the verdict says so.
type preparation struct {
	cancel context.CancelFunc
	copied chan struct{} // closed once the pristine checkout is in the sandbox, or preparation ended
	done   chan struct{} // closed once env and err are set
	env    *sandboxEnv
	err    error
}

// prepare starts the preparation. Everything it reads from the checkout
// (verify commands, setup steps) is read here, before any edit.
func (s *jobState) prepare(ctx context.Context) *preparation {
	ctx, cancel := context.WithCancel(ctx)
	p := &preparation{cancel: cancel, copied: make(chan struct{}), done: make(chan struct{})}
	env := &sandboxEnv{cmds: s.verifyCommands(s.in.Dir), manifests: s.manifestDigest()}
	steps := s.cfg.SetupSteps(s.in.Dir)
	var base *checkout
	if s.in.BaselineDir != "" {
		base = &checkout{dir: s.in.BaselineDir, cmds: s.verifyCommands(s.in.BaselineDir), steps: s.cfg.SetupSteps(s.in.BaselineDir)}
	} else if s.in.Pristine == nil {
		// A base verified with a kept setup could not be verified again
		// from scratch once the model edits Dir: keep none.
		s.noRestore = true
	}
	var once sync.Once
	copied := func() { once.Do(func() { close(p.copied) }) }
	go func() {
		defer copied() // after done, so a failure before the copy is seen by waitCopied
		defer close(p.done)
		p.env, p.err = s.ready(ctx, env, steps, base, copied)
	}()
	return p
}

// checkout is a directory to verify with what was read from it.
type checkout struct {
	dir   string
	cmds  []verify.Command
	steps []repoconfig.SetupStep
}

// ready does the preparation's work. The env is returned even with an
// error, so that whatever was started is closed.
func (s *jobState) ready(ctx context.Context, env *sandboxEnv, steps []repoconfig.SetupStep, base *checkout, copied func()) (*sandboxEnv, error) {
	if s.p.o.Sandbox == nil {
		return env, errors.New("no sandbox: verification needs Docker")
	}
	s.decideSmoke(ctx)
	baseSHA := s.in.BaseSHA
	if s.in.BaselineSHA != "" {
		baseSHA = s.in.BaselineSHA
	}
	keyed := checkout{dir: s.in.Dir, cmds: env.cmds, steps: steps}
	if base != nil {
		keyed = *base
	}
	s.baseKey = s.baselineKey(ctx, baseSHA, keyed)
	if s.baseKey != nil {
		if run, found, err := s.p.o.Baseline.Get(*s.baseKey); err == nil && found {
			s.out.Base = &run
		}
	}
	var snap *earlySnapshot
	if s.out.Base == nil && base == nil && s.smoke.on {
		// The base's smoke stage builds the pristine checkout: its context
		// is taken while the sandbox starts, before any edit may begin.
		snap = s.snapshotNow(ctx, s.in.Dir)
		defer snap.release()
		copied = snap.before(copied)
	}
	sess, setup, restored, err := s.start(ctx, s.in.Dir, steps, copied)
	if err != nil {
		return env, err
	}
	env.sess, env.setup, env.restored = sess, setup, restored
	if s.out.Base == nil {
		run, trust, err := s.verifyBase(ctx, env, base, snap)
		if err != nil {
			return env, fmt.Errorf("baseline verification: %w", err)
		}
		s.setBase(run, trust)
	}
	s.artifact("verify-base.json", s.out.Base)
	return env, nil
}

// verifyBase verifies the base commit — in env's sandbox, or, when the
// baseline is another commit (a pull request's base), in a container of
// its own — and says how far the run it returns can be trusted. A base
// verified with a kept setup restored from the repository's cache is
// trusted only when nothing fails (settle); otherwise the base is
// verified again with setup from scratch, from a pristine copy, and that
// run is the baseline; the change is then verified with setup from
// scratch too. When no pristine copy can be made, the run with the kept
// setup stays the baseline, unconfirmed: the change is still verified
// with setup from scratch, and judge lets none of the base's failures
// excuse the change's.
func (s *jobState) verifyBase(ctx context.Context, env *sandboxEnv, base *checkout, snap *earlySnapshot) (verify.Run, baseTrust, error) {
	if base != nil {
		be, err := s.startEnv(ctx, *base)
		if err != nil {
			return verify.Run{}, baseSetUp, fmt.Errorf("baseline sandbox: %w", err)
		}
		defer be.close()
		run, err := s.baseline(ctx, be.sess, be.setup, be.cmds, s.smokeSource(base.dir))
		if err != nil {
			return run, baseSetUp, err
		}
		// BaselineDir is never edited: it is the pristine copy.
		run, err = s.settle(ctx, be, run, asIs(*base))
		return run, trustOf(be), err
	}
	run, err := s.baseline(ctx, env.sess, env.setup, env.cmds, snap.source())
	if err != nil {
		return run, baseSetUp, err
	}
	// The model may be editing Dir by now: the base comes from Pristine.
	settled, err := s.settle(ctx, env, run, s.pristineBase)
	if errors.Is(err, errNoPristine) {
		s.log.Warn("the base fails with a kept setup and cannot be verified again; its failures excuse none of the change's", "err", err)
		return run, baseUnconfirmed, nil
	}
	return settled, trustOf(env), err
}

// baseTrust is how far a job's baseline can be trusted, and so whether it
// is kept in the baseline cache.
type baseTrust int

const (
	// baseSetUp: made with setup run from scratch (or taken from the
	// cache); kept at once.
	baseSetUp baseTrust = iota
	// baseKept: made with a kept setup, and nothing failed; kept at the
	// job's end unless the job finds that setup spoiled (keepBase).
	baseKept
	// baseUnconfirmed: made with a kept setup, something failed, and it
	// could not be verified again (no pristine copy): never kept, and its
	// failures excuse none of the change's (judge).
	baseUnconfirmed
)

// trustOf is the trust of a settled run made in env.
func trustOf(env *sandboxEnv) baseTrust {
	if env.restored != "" {
		return baseKept
	}
	return baseSetUp
}

// errNoPristine: no pristine copy of the base could be made.
var errNoPristine = errors.New("no pristine copy of the base")

// pristineBase writes the base commit's files, as Pristine gives them,
// into a new directory in the job's scratch space (Input.Scratch: the
// data directory, not the host's /tmp, for a server's job), and returns
// that checkout with a function that removes it.
func (s *jobState) pristineBase(ctx context.Context) (checkout, func(), error) {
	dir, err := os.MkdirTemp(s.in.Scratch, "base-")
	if err != nil {
		return checkout{}, nil, fmt.Errorf("%w: %w", errNoPristine, err)
	}
	remove := func() { os.RemoveAll(dir) }
	if err := s.in.Pristine(ctx, dir); err != nil {
		remove()
		return checkout{}, nil, fmt.Errorf("%w: %w", errNoPristine, err)
	}
	return checkout{dir: dir, cmds: s.verifyCommands(dir), steps: s.cfg.SetupSteps(dir)}, remove, nil
}

// asIs gives checkout c, which nothing edits, as its own pristine copy.
func asIs(c checkout) func(context.Context) (checkout, func(), error) {
	return func(context.Context) (checkout, func(), error) { return c, func() {}, nil }
}

// smokeSource is dir's build context for the smoke stage, when it runs.
func (s *jobState) smokeSource(dir string) contextSource {
	if !s.smoke.on {
		return nil
	}
	return s.fromDir(dir)
}

// startEnv starts a container for checkout c (startEnv's caller closes
// it) with c's setup run or restored.
func (s *jobState) startEnv(ctx context.Context, c checkout) (*sandboxEnv, error) {
	sess, setup, restored, err := s.start(ctx, c.dir, c.steps, nil)
	if err != nil {
		return nil, err
	}
	return &sandboxEnv{sess: sess, setup: setup, cmds: c.cmds, restored: restored}, nil
}

// settle returns what to trust of run, made in env: run itself when env's
// setup ran, or was restored and nothing fails. A run with a kept setup in
// which something fails is not trusted: a spoiled kept setup could make a
// test fail on the base and on the change alike and so hide the change
// breaking it. Then the checkout (pristine, as pristine gives it with a
// function that removes it) is verified again in a new sandbox whose setup
// runs from scratch, which replaces env's (closed), and that run is
// returned; the kept setup is forgotten when the two runs differ, and
// either way the job sets up from scratch from now on. When pristine
// fails, env is left as it was and the error is returned.
func (s *jobState) settle(ctx context.Context, env *sandboxEnv, run verify.Run, pristine func(context.Context) (checkout, func(), error)) (verify.Run, error) {
	if env.restored == "" || run.Passed {
		return run, nil
	}
	key := env.restored
	s.log.Info("the base fails with a kept setup; verifying it again with setup from scratch", "key", key)
	s.noRestore = true
	c, remove, err := pristine(ctx)
	if err != nil {
		return verify.Run{}, err
	}
	defer remove()
	env.close()
	fresh, err := s.startEnv(ctx, c)
	if err != nil {
		return verify.Run{}, fmt.Errorf("baseline sandbox: %w", err)
	}
	// The fresh sandbox holds the base with its setup run, as env's did:
	// the change is verified there.
	env.sess, env.setup, env.cmds, env.restored = fresh.sess, fresh.setup, fresh.cmds, ""
	again, err := s.baseline(ctx, env.sess, env.setup, env.cmds, s.smokeSource(c.dir))
	if err != nil {
		return verify.Run{}, err
	}
	if differ(again, run) {
		s.forgetSetup(ctx, env.sess, key)
	}
	return again, nil
}

// differ reports whether two runs of the same commands fail differently:
// something fails in one that passes in the other.
func differ(a, b verify.Run) bool {
	return len(verify.Compare(a, b).Regressions) > 0 || len(verify.Compare(b, a).Regressions) > 0 || a.Passed != b.Passed
}

// forgetSetup forgets the kept setup key, found spoiled, through sess (any
// sandbox of the repository), so the next job sets up afresh and keeps a
// good one; the baseline made with it is not kept either (keepBase).
func (s *jobState) forgetSetup(ctx context.Context, sess Session, key string) {
	s.spoiledSetup = true
	s.log.Warn("the repository's kept setup made tests fail; forgetting it", "key", key)
	if sc, ok := sess.(SetupCache); ok {
		if err := sc.ForgetSetup(ctx, key); err != nil {
			s.log.Warn("forget the kept setup", "err", err)
		}
	}
}

// baseline verifies the base commit: its verify commands, then its smoke
// stage (from src) when the repository has one.
func (s *jobState) baseline(ctx context.Context, sess Session, setup []verify.CommandResult, cmds []verify.Command, src contextSource) (verify.Run, error) {
	defer s.clock.since(stage.PartBaseline, s.p.o.Now())
	run, err := s.runCommands(ctx, sess, setup, cmds)
	if err != nil {
		return run, err
	}
	return s.withSmoke(ctx, run, src)
}

// waitCopied waits until the pristine checkout is in the sandbox, or the
// preparation failed before that.
func (p *preparation) waitCopied(ctx context.Context) error {
	select {
	case <-p.copied:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// wait waits for the whole preparation.
func (p *preparation) wait(ctx context.Context) (*sandboxEnv, error) {
	select {
	case <-p.done:
		return p.env, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close stops a preparation still under way and closes its sandbox.
func (p *preparation) close() {
	p.cancel()
	<-p.done
	if p.env != nil {
		p.env.close()
	}
}

// sandboxEnv is the container the change is verified in, with the setup
// it had.
type sandboxEnv struct {
	sess      Session
	setup     []verify.CommandResult
	cmds      []verify.Command
	manifests string // digest of the dependency manifests setup ran on
	restored  string // the kept setup restored instead of running setup ("": none)
}

func (e *sandboxEnv) close() {
	if e.sess != nil {
		e.sess.Close(context.Background())
		e.sess = nil
	}
}

// verifyCommands are the verification commands for the checkout at dir.
func (s *jobState) verifyCommands(dir string) []verify.Command { return verifyCommands(s.cfg, dir) }

// verifyCommands are cfg's verification commands for the checkout at dir.
func verifyCommands(cfg *repoconfig.Config, dir string) []verify.Command {
	var cmds []verify.Command
	for _, c := range cfg.VerifyCommands(dir) {
		cmds = append(cmds, verify.Command{Name: c.Name, Run: c.Run, Timeout: c.Timeout, Kind: commandKind(c.Kind),
			Reports: c.Reports, Runner: string(c.Runner), OutputBytes: cfg.Limits.OutputBytes})
	}
	return cmds
}

// runCommands runs the verification commands in sess, or skips them all
// when a setup step failed.
func (s *jobState) runCommands(ctx context.Context, sess Session, setup []verify.CommandResult, cmds []verify.Command) (verify.Run, error) {
	var run verify.Run
	if failed := setupFailed(setup); failed {
		run = verify.Skip(cmds, verify.SkipSetupFailed)
	} else {
		var err error
		if run, err = verify.Verify(ctx, sess, cmds); err != nil {
			return run, err
		}
	}
	run.Setup = setup
	return run, nil
}

func setupFailed(setup []verify.CommandResult) bool {
	for _, r := range setup {
		if !r.Passed {
			return true
		}
	}
	return false
}

// start starts a container with dir copied in (then calls copied, if set)
// and the setup steps run, or what they made for the same manifests
// restored from the repository's cache (the key it returns names what was
// restored; "" when setup ran); the setup network, if any, is gone when it
// returns. Setup stops at the first step that fails; its results are
// returned either way.
func (s *jobState) start(ctx context.Context, dir string, steps []repoconfig.SetupStep, copied func()) (Session, []verify.CommandResult, string, error) {
	sess, restored, key, err := s.boot(ctx, dir, steps, !s.noRestore)
	if errors.Is(err, errRestore) {
		// A cache that cannot be read costs time, not correctness. The
		// checkout is still pristine (nothing was signalled): start over.
		s.log.Warn("setup cache unreadable; setting up from scratch", "err", err)
		sess, restored, key, err = s.boot(ctx, dir, steps, false)
	}
	if err != nil {
		return nil, nil, "", err
	}
	if copied != nil {
		copied()
	}
	fail := func(err error) (Session, []verify.CommandResult, string, error) {
		sess.Close(context.Background())
		return nil, nil, "", err
	}
	began := s.p.o.Now()
	var results []verify.CommandResult
	for _, st := range steps {
		c := verify.Command{Name: st.Name, Run: st.Run, Timeout: st.Timeout, Kind: verify.OtherCommand}
		if restored {
			results = append(results, verify.Result(c, "", verify.Outcome{Output: restoredNote + key[:12] + ")"}))
			continue
		}
		out, err := sess.Setup(ctx, st.Run, st.Timeout)
		if err != nil {
			return fail(fmt.Errorf("setup %q: %w", st.Run, err))
		}
		res := verify.Result(c, "", out)
		results = append(results, res)
		if !res.Passed {
			break
		}
	}
	if needsNetwork(steps) {
		if err := sess.DropNetwork(ctx); err != nil {
			return fail(fmt.Errorf("drop setup network: %w", err))
		}
	}
	if sc, ok := sess.(SetupCache); ok && key != "" && !restored && !setupFailed(results) {
		if err := sc.SaveSetup(ctx, key); err != nil {
			s.log.Warn("keep setup in the cache", "err", err)
		}
	}
	if len(steps) > 0 {
		s.clock.since(stage.PartSetup, began)
	}
	if !restored {
		key = ""
	}
	return sess, results, key, nil
}

// needsNetwork reports whether a setup step may use the network.
func needsNetwork(steps []repoconfig.SetupStep) bool {
	return slices.ContainsFunc(steps, func(st repoconfig.SetupStep) bool { return st.Network })
}

// restoredNote begins the output of a setup step whose work was restored.
const restoredNote = "not run: what it made for the same dependency manifests was restored from the repository's cache (setup "

// errRestore: the repository's setup cache could not be read.
var errRestore = errors.New("restore setup from the cache")

// boot starts a container with dir copied in and, when restore is set and
// the session keeps setups, what setup made for the same manifests
// restored (restored) or the tree listed for saving it later (key).
func (s *jobState) boot(ctx context.Context, dir string, steps []repoconfig.SetupStep, restore bool) (sess Session, restored bool, key string, err error) {
	deadline := time.Time{}
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	began := s.p.o.Now()
	sess, err = s.p.o.Sandbox.Start(ctx, SandboxSpec{JobID: s.in.JobID, Image: s.cfg.Image, Deadline: deadline,
		SetupNetwork: needsNetwork(steps), Cache: s.in.Repository})
	if err != nil {
		return nil, false, "", fmt.Errorf("start sandbox: %w", err)
	}
	if err := sess.CopyTree(ctx, dir); err != nil {
		sess.Close(context.Background())
		return nil, false, "", fmt.Errorf("copy checkout into sandbox: %w", err)
	}
	s.clock.since(stage.PartSandboxStart, began)
	sc, ok := sess.(SetupCache)
	if !restore || !ok || len(steps) == 0 {
		return sess, false, "", nil
	}
	if key, err = setupKey(dir, steps); err != nil {
		s.log.Warn("no setup cache key", "err", err)
		return sess, false, "", nil
	}
	began = s.p.o.Now()
	restored, err = sc.RestoreSetup(ctx, key)
	if err != nil {
		sess.Close(context.Background())
		return nil, false, "", fmt.Errorf("%w: %w", errRestore, err)
	}
	if restored {
		s.clock.since(stage.PartSetup, began)
	}
	return sess, restored, key, nil
}

// setupKey names a setup by what decides its outcome: the steps and every
// dependency manifest of the checkout (the image is the cache's own key).
func setupKey(dir string, steps []repoconfig.SetupStep) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "selfcode-setup-v1\x00%d\x00", len(steps))
	for _, st := range steps {
		fmt.Fprintf(h, "%d\x00%s\x00%t\x00", len(st.Run), st.Run, st.Network)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == ".venv") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() || !repoconfig.IsManifest(rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%d\x00%s\x00%d\x00", len(rel), rel, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// setBase records the baseline and keeps it in the baseline cache — at
// once when its setup ran, at the end of the job when its setup was
// restored from the repository's cache (keepBase), so that a kept setup
// found spoiled meanwhile (spoiledSetup) never leaves its baseline behind,
// and never when it is unconfirmed.
func (s *jobState) setBase(base verify.Run, trust baseTrust) {
	s.out.Base = &base
	s.baseTrust = trust
	switch trust {
	case baseKept:
		s.pendingBase = true
	case baseSetUp:
		s.storeBase()
	}
}

// keepBase stores a baseline made with a restored setup unless the job
// found that setup spoiled.
func (s *jobState) keepBase() {
	if s.pendingBase && !s.spoiledSetup {
		s.storeBase()
	}
}

func (s *jobState) storeBase() {
	if s.baseKey != nil && s.out.Base != nil {
		if err := s.p.o.Baseline.Put(*s.baseKey, *s.out.Base); err != nil && !errors.Is(err, verify.ErrIncompleteRun) {
			s.log.Warn("store baseline", "err", err)
		}
	}
}

// baselineKey keys the baseline of commit sha, checked out as c, in the
// baseline cache: the repository's own (never another's), the
// configuration and c's commands as they run here (baselineHash) and the
// ID of the sandbox image. nil when there is no
// cache, no commit or repository name, or the image cannot be told apart
// from another (the sandbox cannot say its ID): then the base is verified
// every time, as a rebuilt image must be.
func (s *jobState) baselineKey(ctx context.Context, sha string, c checkout) *verify.Key {
	if s.p.o.Baseline == nil || sha == "" || s.in.Repository == "" {
		return nil
	}
	id, err := s.p.o.Sandbox.ImageID(ctx, s.cfg.Image)
	if err == nil && id == "" {
		err = errors.New("the sandbox gave no image ID")
	}
	if err != nil {
		s.log.Warn("no baseline cache: the sandbox image is unknown", "err", err)
		return nil
	}
	return &verify.Key{Repository: s.in.Repository, SHA: sha, Config: s.baselineHash(c), Image: id}
}
