package templates

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"unicode/utf16"
)

//go:embed *.tmpl
var embedded embed.FS

// MaxBodyLen is GitHub's limit on an issue, comment or pull request body, in
// characters (counted here as UTF-16 code units, the stricter reading).
const MaxBodyLen = 65536

// Names of the entry templates; each is a {{define}} block.
const (
	TmplPRBody           = "pr_body"
	TmplProgress         = "progress_comment"
	TmplPlan             = "plan_comment"
	TmplStatus           = "status_reply"
	TmplHelp             = "help_reply"
	TmplPermissionDenied = "permission_denied"
	TmplFailureReport    = "failure_report"
	TmplJobFailed        = "job_failed"
	TmplUnfinished       = "unfinished_report"
)

var entries = []string{TmplPRBody, TmplProgress, TmplPlan, TmplStatus, TmplHelp,
	TmplPermissionDenied, TmplFailureReport, TmplJobFailed, TmplUnfinished}

// ErrTooLong means a body stays over MaxBodyLen even with every log dropped.
var ErrTooLong = errors.New("rendered body exceeds GitHub's size limit")

// Options configures a Renderer.
type Options struct {
	// OverrideDir, if set, holds *.tmpl files parsed after the embedded ones;
	// a file may redefine single blocks (e.g. only "pr_summary").
	OverrideDir string
	// MaxLen caps the rendered length; default MaxBodyLen.
	MaxLen int
}

// Renderer renders reports. It is safe for concurrent use.
type Renderer struct {
	tmpl   *template.Template
	maxLen int
}

// New parses the embedded templates, then the overrides, and checks that
// every entry template renders sample data.
func New(opts Options) (*Renderer, error) {
	root := template.New("selfcode").Funcs(funcs()).Option("missingkey=error")
	names, err := fs.Glob(embedded, "*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("list embedded templates: %w", err)
	}
	for _, name := range names {
		b, err := embedded.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded template %s: %w", name, err)
		}
		if _, err := root.New(name).Parse(string(b)); err != nil {
			return nil, fmt.Errorf("parse embedded template %s: %w", name, err)
		}
	}
	if opts.OverrideDir != "" {
		files, err := filepath.Glob(filepath.Join(opts.OverrideDir, "*.tmpl"))
		if err != nil {
			return nil, fmt.Errorf("list override templates: %w", err)
		}
		if _, err := os.Stat(opts.OverrideDir); err != nil {
			return nil, fmt.Errorf("override template dir: %w", err)
		}
		sort.Strings(files)
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("read override template %s: %w", path, err)
			}
			if _, err := root.New("override:" + path).Parse(string(b)); err != nil {
				return nil, fmt.Errorf("parse override template %s: %w", path, err)
			}
		}
	}
	r := &Renderer{tmpl: root, maxLen: opts.MaxLen}
	if r.maxLen <= 0 {
		r.maxLen = MaxBodyLen
	}
	for _, name := range entries {
		if root.Lookup(name) == nil {
			return nil, fmt.Errorf("template %q is not defined", name)
		}
	}
	if err := r.selfTest(opts.OverrideDir); err != nil {
		return nil, err
	}
	return r, nil
}

// selfTest renders every entry with sample data so that an override that
// names a missing field fails at start-up, not on the first real job.
func (r *Renderer) selfTest(overrideDir string) error {
	sample := sampleReport()
	checks := map[string]any{
		TmplPRBody: sample, TmplProgress: sample, TmplPlan: sample, TmplFailureReport: sample,
		TmplJobFailed: sample, TmplUnfinished: sample, TmplStatus: sampleStatus(), TmplHelp: HelpView{CommandWord: "/selfcode", Label: "selfcode", OvernightLabel: "selfcode:overnight"},
		TmplPermissionDenied: DeniedView{CommandWord: "/selfcode", Sender: "octocat", Permission: "read"},
	}
	for _, name := range entries {
		var buf bytes.Buffer
		if err := r.tmpl.ExecuteTemplate(&buf, name, checks[name]); err != nil {
			where := "embedded templates"
			if overrideDir != "" {
				where = "templates with overrides from " + overrideDir
			}
			return fmt.Errorf("%s: sample render of %q failed: %w", where, name, err)
		}
	}
	return nil
}

// bodyLen is the length GitHub counts: UTF-16 code units.
func bodyLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func (r *Renderer) exec(name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := r.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return strings.TrimSpace(buf.String()) + "\n", nil
}

// renderReport renders rep, trimming its logs step by step until the body
// fits, and dropping them as a last resort.
func (r *Renderer) renderReport(name string, rep Report) (string, error) {
	var last int
	for level := range trimLevels {
		out, err := r.exec(name, rep.trimmed(level))
		if err != nil {
			return "", err
		}
		if last = bodyLen(out); last <= r.maxLen {
			return out, nil
		}
	}
	return "", fmt.Errorf("render %s: %d characters without logs, limit %d: %w", name, last, r.maxLen, ErrTooLong)
}

func (r *Renderer) renderPlain(name string, data any) (string, error) {
	out, err := r.exec(name, data)
	if err != nil {
		return "", err
	}
	if n := bodyLen(out); n > r.maxLen {
		return "", fmt.Errorf("render %s: %d characters, limit %d: %w", name, n, r.maxLen, ErrTooLong)
	}
	return out, nil
}

// PRBody renders the pull request body.
func (r *Renderer) PRBody(rep Report) (string, error) { return r.renderReport(TmplPRBody, rep) }

// Progress renders the progress comment, which starts with the job's marker.
func (r *Renderer) Progress(rep Report) (string, error) { return r.renderReport(TmplProgress, rep) }

// PlanComment renders the reply to "/selfcode plan".
func (r *Renderer) PlanComment(rep Report) (string, error) { return r.renderReport(TmplPlan, rep) }

// FailureReport renders the comment posted when verification still fails and
// no draft PR is opened (draft_on_failure: false).
func (r *Renderer) FailureReport(rep Report) (string, error) {
	return r.renderReport(TmplFailureReport, rep)
}

// Unfinished renders the comment that reports the work of a job stopped at
// a limit when there is no pull request for it (no change yet, or
// draft_on_failure: false), with the diff when there is one.
func (r *Renderer) Unfinished(rep Report) (string, error) { return r.renderReport(TmplUnfinished, rep) }

// JobFailed renders the comment for a job that ended in an error.
func (r *Renderer) JobFailed(rep Report) (string, error) { return r.renderReport(TmplJobFailed, rep) }

// Status renders the reply to "/selfcode status".
func (r *Renderer) Status(v StatusView) (string, error) { return r.renderPlain(TmplStatus, v) }

// Help renders the reply to "/selfcode help".
func (r *Renderer) Help(v HelpView) (string, error) { return r.renderPlain(TmplHelp, v) }

// PermissionDenied renders the reply to a sender who may not trigger selfcode.
func (r *Renderer) PermissionDenied(v DeniedView) (string, error) {
	return r.renderPlain(TmplPermissionDenied, v)
}
