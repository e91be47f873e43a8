package pipeline

import (
	"fmt"
	"slices"
	"strings"
)

// Resume is the work of an earlier run of a job that stopped at a limit,
// which a later run (`/selfcode retry`) continues: the checkout it starts
// from already holds that work.
type Resume struct {
	// Stopped says which limit stopped the earlier run, in words.
	Stopped string `json:"stopped"`
	// Plan is the plan it followed; nil when it stopped before it had
	// one (the new run plans).
	Plan *Plan `json:"plan,omitempty"`
	// Changed are the files it changed.
	Changed []string `json:"changed,omitempty"`
	// Summary is what the model last said it did.
	Summary string `json:"summary,omitempty"`
}

// Steps splits the plan's steps into those done (every file they name was
// changed) and those left.
func (r *Resume) Steps() (done, left []PlanStep) {
	if r.Plan == nil {
		return nil, nil
	}
	for _, st := range r.Plan.Steps {
		finished := len(st.Files) > 0
		for _, f := range st.Files {
			if !slices.Contains(r.Changed, f.Path) {
				finished = false
			}
		}
		if finished {
			done = append(done, st)
		} else {
			left = append(left, st)
		}
	}
	return done, left
}

// Progress is what was done and what was left, in words for the model
// and for people.
func (r *Resume) Progress() string {
	var b strings.Builder
	if len(r.Changed) > 0 {
		fmt.Fprintf(&b, "Files changed so far: %s\n", strings.Join(r.Changed, ", "))
	} else {
		b.WriteString("No file was changed yet.\n")
	}
	done, left := r.Steps()
	for _, part := range []struct {
		name  string
		steps []PlanStep
	}{{"Steps done", done}, {"Steps left", left}} {
		if len(part.steps) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s:\n", part.name)
		for _, st := range part.steps {
			fmt.Fprintf(&b, "- %s. %s\n", st.ID, st.Title)
		}
	}
	if s := strings.TrimSpace(r.Summary); s != "" {
		fmt.Fprintf(&b, "What it said it did: %s\n", s)
	}
	return strings.TrimSpace(b.String())
}
