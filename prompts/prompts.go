package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

//go:embed *.tmpl
var embedded embed.FS

// Names of the prompts.
const (
	PlannerSystem  = "planner_system.tmpl"
	PlannerUser    = "planner_user.tmpl"
	PlanRetry      = "plan_retry.tmpl"
	PlanNarrow     = "plan_narrow.tmpl"
	EditorSystem   = "editor_system.tmpl"
	EditorUser     = "editor_user.tmpl"
	FixerSystem    = "fixer_system.tmpl"
	FixerUser      = "fixer_user.tmpl"
	ReporterSystem = "reporter_system.tmpl"
	ReporterUser   = "reporter_user.tmpl"
	Nudge          = "nudge.tmpl"
	// Resume says where the earlier run a resumed job continues stopped;
	// the planner, editor and fixer prompts carry it as .Resume.
	Resume = "resume.tmpl"
)

// Options configures Load.
type Options struct {
	// Dir, when set, holds *.tmpl files that replace embedded prompts of the
	// same name.
	Dir string
}

// Set is a parsed set of prompts.
type Set struct{ t *template.Template }

// Load parses the embedded prompts and the overrides.
func Load(o Options) (*Set, error) {
	funcs := template.FuncMap{"data": Data, "join": strings.Join}
	t := template.New("prompts").Funcs(funcs).Option("missingkey=error")
	entries, err := embedded.ReadDir(".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := embedded.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		if _, err := t.New(e.Name()).Parse(string(b)); err != nil {
			return nil, fmt.Errorf("parse embedded prompt %s: %w", e.Name(), err)
		}
	}
	if o.Dir != "" {
		if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("prompt overrides: %s is not a readable folder: %w", o.Dir, errors.Join(err, os.ErrNotExist))
		}
		files, err := filepath.Glob(filepath.Join(o.Dir, "*.tmpl"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read prompt override: %w", err)
			}
			name := filepath.Base(f)
			if t.Lookup(name) == nil {
				return nil, fmt.Errorf("prompt override %s: no embedded prompt has that name", f)
			}
			if _, err := t.New(name).Parse(string(b)); err != nil {
				return nil, fmt.Errorf("parse prompt override %s: %w", f, err)
			}
		}
	}
	return &Set{t: t}, nil
}

// Render executes one prompt.
func (s *Set) Render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := s.t.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render prompt %s: %w", name, err)
	}
	return strings.TrimSpace(b.String()), nil
}

// fenceTag matches what could read as the start of a data tag, opening
// or closing: "<" — or an HTML entity or look-alike of it — then
// optionally "/" (or its entity), then "data", in any case, with spaces
// and invisible characters allowed anywhere between: "</DATA>",
// "</data >", "</data\n>", "&lt;/data&gt;", "<\u200b/data>", "＜/data＞".
var fenceTag = regexp.MustCompile(`(?i)(?:<|&lt;?|&#0*60;?|&#x0*3c;?|\x{FF1C}|\x{FE64})` + fill +
	`((?:/|\\/|&#0*47;?|&#x0*2f;?|&sol;|\x{FF0F})?)` + fill + `(d)` + fill + `(a)` + fill + `(t)` + fill + `(a)`)

// fill is what fenceTag allows between the characters of a tag: spaces
// and invisible (format) characters.
const fill = `(?:\s|\p{Cf})*`

// Data wraps untrusted text in delimiters that it cannot close or reopen:
// anything in it that could read as a data tag (fenceTag) is defused,
// its "<" replaced by "‹" and what hid between its characters removed
// ("</DATA >" becomes "‹/DATA >").
func Data(kind, text string) string {
	text = fenceTag.ReplaceAllStringFunc(text, func(m string) string {
		sub := fenceTag.FindStringSubmatch(m)
		slash := ""
		if sub[1] != "" {
			slash = "/"
		}
		return "‹" + slash + sub[2] + sub[3] + sub[4] + sub[5]
	})
	return fmt.Sprintf("<data kind=%q>\n%s\n</data>", kind, text)
}
