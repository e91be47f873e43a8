package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/prompts"
)

// ScopeArtifact is the name of the artifact that records the scope guard's
// findings (a Scope as JSON).
const ScopeArtifact = "scope.json"

// Scope is what the scope guard found about the plan that was carried out
// (or refused).
type Scope struct {
	Files    []string `json:"files"`     // the plan's distinct paths
	MaxFiles int      `json:"max_files"` // limits.max_files
	// Packages are the Go packages the plan's non-test Go files belong to;
	// BlastRadius the packages of the module that import them, directly or
	// through others.
	Packages    []string `json:"packages,omitempty"`
	BlastRadius []string `json:"blast_radius"`
	Limit       int      `json:"limit"` // limits.blast_radius
	// Narrowed is set when the first plan was too wide and the planner was
	// asked once for a narrower one; First is what the first plan reached.
	Narrowed bool   `json:"narrowed,omitempty"`
	First    *Scope `json:"first,omitempty"`
	// TooWide says how the plan exceeds the limits ("" when within them).
	TooWide string `json:"too_wide,omitempty"`
	// Note says why the blast radius could not be computed, if it could not.
	Note string `json:"note,omitempty"`
}

// GoPackage is what the scope guard needs of `go list -json`.
type GoPackage struct {
	ImportPath string
	Dir        string
	Deps       []string
}

// PackageLister lists the packages of the Go module checked out in dir.
type PackageLister interface {
	Packages(ctx context.Context, dir string) ([]GoPackage, error)
}

// ErrNoGo is returned (wrapped) when the go command is not installed.
var ErrNoGo = errors.New("the go command is not installed on the server")

// GoList lists packages with `go list -e -json ./...` run on the server, on
// the job's checkout. go list reads the module's files but executes none of
// its code; it runs without network (GOPROXY=off), without the checkout's
// choice of toolchain (GOTOOLCHAIN=local) or workspace (GOWORK=off), without
// cgo, and with only the environment it needs (no secrets).
type GoList struct {
	// Timeout bounds one go list; default 2 minutes.
	Timeout time.Duration
}

// Packages implements PackageLister.
func (g GoList) Packages(ctx context.Context, dir string) ([]GoPackage, error) {
	bin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoGo, err)
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "list", "-e", "-json=ImportPath,Dir,Deps", "./...")
	cmd.Dir = dir
	cmd.Env = goListEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, firstLines(stderr.String(), 5))
	}
	var out []GoPackage
	dec := json.NewDecoder(&stdout)
	for {
		var p GoPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// goListEnv is the whole environment of go list: where Go and its caches
// are, and the settings that keep it offline and local.
func goListEnv() []string {
	env := []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0", "GONOSUMDB=*", "GOSUMDB=off"}
	for _, k := range []string{"PATH", "HOME", "GOROOT", "GOPATH", "GOMODCACHE", "GOCACHE", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// BlastRadius returns the packages that the plan's files belong to and the
// packages of pkgs that depend on them (directly or not), both sorted. Only
// non-test .go files count; a file in a directory that is not yet a package
// touches nothing others import.
func BlastRadius(pkgs []GoPackage, root string, files []string) (touched, radius []string) {
	byDir := map[string]string{}
	for _, p := range pkgs {
		byDir[filepath.Clean(p.Dir)] = p.ImportPath
	}
	hit := map[string]bool{}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		if ip, ok := byDir[filepath.Join(root, filepath.Dir(filepath.FromSlash(f)))]; ok && !hit[ip] {
			hit[ip] = true
			touched = append(touched, ip)
		}
	}
	if len(touched) == 0 {
		return nil, nil
	}
	for _, p := range pkgs {
		if hit[p.ImportPath] {
			continue
		}
		for _, d := range p.Deps {
			if hit[d] {
				radius = append(radius, p.ImportPath)
				break
			}
		}
	}
	sort.Strings(touched)
	sort.Strings(radius)
	return touched, radius
}

// checkScope measures a plan against max_files and, for a Go module, the
// blast radius limit.
func (s *jobState) checkScope(ctx context.Context, plan *Plan) Scope {
	sc := Scope{Files: plan.Files(), MaxFiles: s.cfg.Limits.MaxFiles, Limit: s.cfg.Limits.BlastRadius, BlastRadius: []string{}}
	var wide []string
	if sc.MaxFiles > 0 && len(sc.Files) > sc.MaxFiles {
		wide = append(wide, fmt.Sprintf("it touches %d files (max_files %d)", len(sc.Files), sc.MaxFiles))
	}
	if _, err := os.Stat(filepath.Join(s.in.Dir, "go.mod")); err == nil {
		root, err := filepath.EvalSymlinks(s.in.Dir)
		if err != nil {
			root = s.in.Dir
		}
		pkgs, err := s.p.o.Packages.Packages(ctx, root)
		switch {
		case err != nil:
			sc.Note = "blast radius not computed: " + err.Error()
			s.log.Warn("blast radius not computed", "err", err)
		default:
			touched, radius := BlastRadius(pkgs, root, sc.Files)
			sc.Packages = touched
			if radius != nil {
				sc.BlastRadius = radius
			}
			if len(radius) > sc.Limit {
				wide = append(wide, fmt.Sprintf("its blast radius is %d packages (limit %d): %s",
					len(radius), sc.Limit, strings.Join(abbreviate(radius, 10), ", ")))
			}
		}
	}
	sc.TooWide = strings.Join(wide, "; ")
	return sc
}

func abbreviate(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("and %d more", len(list)-n))
}

// guardScope checks the plan before any edit. A plan beyond the limits gets
// one request for a narrower plan; if that is still too wide, the job is
// skipped with the reason in Output.Skipped.
func (s *jobState) guardScope(ctx context.Context, msgs []chat.Message, plan *Plan) (*Plan, error) {
	sc := s.checkScope(ctx, plan)
	if sc.TooWide != "" {
		first := sc
		s.stage(stage.Plan, stage.Running, "plan too wide ("+first.TooWide+"); asking for a narrower one")
		narrow, err := s.narrow(ctx, msgs, plan, first)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			s.log.Warn("no narrower plan", "err", err)
		default:
			plan = narrow
			sc = s.checkScope(ctx, plan)
		}
		sc.Narrowed, sc.First = true, &first
	}
	s.out.Scope = &sc
	s.artifact(ScopeArtifact, sc)
	if sc.TooWide != "" {
		s.out.Skipped = "Skipped: the plan is too wide for one change even after asking for a narrower plan: " + sc.TooWide + "."
	}
	return plan, nil
}

// narrow asks the planner once for a narrower plan, in the same conversation.
func (s *jobState) narrow(ctx context.Context, msgs []chat.Message, plan *Plan, sc Scope) (*Plan, error) {
	prev, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}
	ask, err := s.p.o.Prompts.Render(prompts.PlanNarrow, map[string]any{
		"Reason": sc.TooWide, "BlastRadius": abbreviate(sc.BlastRadius, 20), "MaxFiles": s.cfg.Limits.MaxFiles,
	})
	if err != nil {
		return nil, err
	}
	msgs = append(append([]chat.Message(nil), msgs...),
		chat.Message{Role: chat.Assistant, Content: string(prev)}, chat.Message{Role: chat.User, Content: ask})
	return s.askPlan(ctx, msgs)
}
