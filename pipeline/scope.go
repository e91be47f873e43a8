package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/selfcode/selfcode/internal/shortlist"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/radius"
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
	// Packages are the units the plan's code belongs to — Go packages,
	// Python modules, JavaScript/TypeScript modules (pipeline/radius) —
	// and BlastRadius the repository's other units that import them,
	// directly or through others (test code not counted).
	Packages    []string `json:"packages,omitempty"`
	BlastRadius []string `json:"blast_radius"`
	Limit       int      `json:"limit"` // limits.blast_radius
	// Languages are those whose imports were read.
	Languages []string `json:"languages,omitempty"`
	// Unread are files left unread as too large, in languages the plan
	// does not touch (they cannot import it); one in a touched language
	// makes the radius unknown (Note).
	Unread []string `json:"unread,omitempty"`
	// Narrowed is set when the first plan was too wide and the planner was
	// asked once for a narrower one; First is what the first plan reached.
	Narrowed bool   `json:"narrowed,omitempty"`
	First    *Scope `json:"first,omitempty"`
	// TooWide says how the plan exceeds the limits ("" when within them).
	TooWide string `json:"too_wide,omitempty"`
	// Note says why the blast radius could not be computed, if it could not;
	// Held is set when that kept an unattended job from running.
	Note string `json:"note,omitempty"`
	Held bool   `json:"held,omitempty"`
}

// checkScope measures a plan against max_files and the blast radius limit.
// The radius comes from the repository's imports read as text
// (pipeline/radius): nothing of the checkout runs on the server.
func (s *jobState) checkScope(ctx context.Context, plan *Plan) Scope {
	sc := Scope{Files: plan.Files(), MaxFiles: s.cfg.Limits.MaxFiles, Limit: s.cfg.Limits.BlastRadius, BlastRadius: []string{}}
	var wide []string
	if sc.MaxFiles > 0 && len(sc.Files) > sc.MaxFiles {
		wide = append(wide, fmt.Sprintf("it touches %d files (max_files %d)", len(sc.Files), sc.MaxFiles))
	}
	res, err := radius.Compute(ctx, s.in.Dir, sc.Files)
	switch {
	case err != nil:
		sc.Note = err.Error()
		s.log.Warn("blast radius not computed", "err", err)
	default:
		sc.Packages = res.Touched
		if res.Radius != nil {
			sc.BlastRadius = res.Radius
		}
		for _, l := range res.Languages {
			sc.Languages = append(sc.Languages, string(l))
		}
		sc.Unread = res.Skipped
		if len(res.Radius) > sc.Limit {
			wide = append(wide, fmt.Sprintf("its blast radius is %d packages (limit %d): %s",
				len(res.Radius), sc.Limit, strings.Join(shortlist.Abbreviate(res.Radius, 10), ", ")))
		}
	}
	sc.TooWide = strings.Join(wide, "; ")
	return sc
}

// guardScope checks the plan before any edit. A plan beyond the limits gets
// one request for a narrower plan; if that is still too wide, the job is
// skipped with the reason in Output.Skipped. An unattended job whose blast
// radius cannot be computed is held the same way: the guard is never
// silently off.
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
	if sc.Note != "" && sc.TooWide == "" && s.in.Unattended {
		sc.Held = true
		s.out.Skipped = "Skipped: held because the plan's blast radius could not be computed (" + strings.TrimSuffix(sc.Note, ".") +
			"); an overnight job runs only when it is known. Nothing was changed: a maintainer can start the job by hand " +
			"to run it without that measure, or label the issue again once the cause is fixed."
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
		"Reason": sc.TooWide, "BlastRadius": shortlist.Abbreviate(sc.BlastRadius, 20), "MaxFiles": s.cfg.Limits.MaxFiles,
	})
	if err != nil {
		return nil, err
	}
	msgs = append(append([]chat.Message(nil), msgs...),
		chat.Message{Role: chat.Assistant, Content: string(prev)}, chat.Message{Role: chat.User, Content: ask})
	return s.askPlan(ctx, msgs)
}
