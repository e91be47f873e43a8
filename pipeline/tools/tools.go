package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// Tool names (contract section 8).
const (
	View       = "view"
	Search     = "search"
	StrReplace = "str_replace"
	Insert     = "insert"
	Create     = "create"
	Delete     = "delete"
	Finish     = "finish"
)

// Outcomes of a call, for Result.Outcome and metrics.
const (
	OutcomeOK             = "ok"              // view, search, finish
	OutcomeApplied        = "applied"         // an edit was written
	OutcomeNoMatch        = "no_match"        // str_replace found no occurrence
	OutcomeNotUnique      = "not_unique"      // str_replace found several
	OutcomeSyntaxReverted = "syntax_reverted" // an edit would have added syntax errors
	OutcomeDenied         = "denied"          // refused by the path policy or max_files
	OutcomeError          = "error"           // anything else: bad arguments, missing file, I/O
)

// Options configure New.
type Options struct {
	// Root is the absolute path of the checkout.
	Root string
	// Policy limits the paths the model may read, write and delete.
	Policy Policy
	// MaxFiles caps the number of distinct files whose content differs from
	// where the job started (created, modified or deleted); zero or less
	// means no cap. A file edited back to its original state no longer
	// counts.
	MaxFiles int
	// Git is the git binary search runs; default "git" from PATH.
	Git string
	// Logger gets one debug line per call; default slog.Default().
	Logger *slog.Logger
	// Observer, when set, is called after every call with the tool name
	// and the outcome (one of the Outcome constants), e.g. for metrics.
	Observer func(tool, outcome string)
	// Syntax, when set, checks edits of files in languages it knows
	// (Python, JavaScript, TypeScript) with their own toolchain in the
	// sandbox; an edit that adds syntax errors is refused like a Go edit
	// that does not parse. Go is checked here, with go/parser.
	Syntax SyntaxChecker
}

// SyntaxChecker checks source text in its language's own toolchain.
type SyntaxChecker interface {
	// Checks reports whether the checker knows the language of path.
	Checks(path string) bool
	// Check returns the syntax errors of content as the file at path
	// (none when it parses), or an error when it could not check.
	Check(ctx context.Context, path string, content []byte) ([]string, error)
}

// Result is what one call did.
type Result struct {
	// Output goes back to the model; errors start with "ERROR:".
	Output string
	// Changed lists the paths this call wrote or deleted.
	Changed []string
	// Finished is set by finish; Summary is its argument.
	Finished bool
	Summary  string
	// Outcome is one of the Outcome constants.
	Outcome string
}

// Tools runs tool calls against one checkout. It is not safe for
// concurrent use: one conversation calls it at a time.
type Tools struct {
	root     string
	realRoot string
	policy   Policy
	maxFiles int
	git      string
	log      *slog.Logger
	observe  func(tool, outcome string)
	syntax   SyntaxChecker

	// orig holds each touched file's state before its first edit.
	orig map[string]fileState
	// dirty holds the files whose state differs from orig.
	dirty map[string]bool
}

// New checks the options and returns a Tools for the checkout at Root.
func New(opts Options) (*Tools, error) {
	if opts.Root == "" || !filepath.IsAbs(opts.Root) {
		return nil, fmt.Errorf("tools: root %q must be an absolute path", opts.Root)
	}
	real, err := filepath.EvalSymlinks(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("tools: resolve root: %w", err)
	}
	if err := opts.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	t := &Tools{
		root:     filepath.Clean(opts.Root),
		realRoot: real,
		policy:   opts.Policy,
		maxFiles: opts.MaxFiles,
		git:      opts.Git,
		log:      opts.Logger,
		observe:  opts.Observer,
		syntax:   opts.Syntax,
		orig:     map[string]fileState{},
		dirty:    map[string]bool{},
	}
	if t.git == "" {
		t.git = "git"
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	return t, nil
}

// Changed returns, sorted, every file that now differs from where the job
// started.
func (t *Tools) Changed() []string {
	out := make([]string, 0, len(t.dirty))
	for p := range t.dirty {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Definitions returns the tools offered to the editor and fixer roles.
func Definitions() []chat.Tool {
	obj := func(required []string, props string) json.RawMessage {
		req, _ := json.Marshal(required)
		return json.RawMessage(`{"type":"object","additionalProperties":false,"required":` + string(req) + `,"properties":{` + props + `}}`)
	}
	return []chat.Tool{
		{Name: View, Description: "Show a file with line numbers, " + strconv.Itoa(viewWindow) + " lines at a time, or list a directory. Use start_line/end_line to page through long files.",
			Parameters: obj([]string{"path"}, `"path":{"type":"string","description":"File or directory relative to the repository root; \".\" is the root."},"start_line":{"type":"integer","minimum":1,"description":"First line to show (1-based)."},"end_line":{"type":"integer","minimum":1,"description":"Last line to show."}`)},
		{Name: Search, Description: "Search file contents with an extended regular expression (git grep -E). Returns file:line: text hits.",
			Parameters: obj([]string{"pattern"}, `"pattern":{"type":"string","minLength":1,"description":"Extended regular expression; an invalid one is searched as fixed text."},"path":{"type":"string","description":"File or directory to search, relative to the repository root; default the whole repository."}`)},
		{Name: StrReplace, Description: "Replace exactly one occurrence of old_str in a file with new_str. old_str must match one place exactly (trailing whitespace and line endings are tolerated); include enough surrounding lines to make it unique.",
			Parameters: obj([]string{"path", "old_str", "new_str"}, `"path":{"type":"string"},"old_str":{"type":"string","minLength":1,"description":"Text to replace, copied from the file without line numbers."},"new_str":{"type":"string","description":"Replacement text; empty deletes old_str."}`)},
		{Name: Insert, Description: "Insert text after the given line of a file; line 0 inserts at the top.",
			Parameters: obj([]string{"path", "line", "text"}, `"path":{"type":"string"},"line":{"type":"integer","minimum":0,"description":"Insert after this line; 0 means before the first line."},"text":{"type":"string","description":"Lines to insert."}`)},
		{Name: Create, Description: "Create a new file with the given content. Fails if the file exists; edit existing files with str_replace or insert.",
			Parameters: obj([]string{"path", "content"}, `"path":{"type":"string"},"content":{"type":"string"}`)},
		{Name: Delete, Description: "Delete a file.",
			Parameters: obj([]string{"path"}, `"path":{"type":"string"}`)},
		{Name: Finish, Description: "Call when the change is complete, with a short summary of what was changed and why.",
			Parameters: obj([]string{"summary"}, `"summary":{"type":"string","minLength":1}`)},
	}
}

// Definitions is the package-level Definitions, for callers holding a Tools.
func (t *Tools) Definitions() []chat.Tool { return Definitions() }

// toolError is a refused call: its outcome and the message for the model.
type toolError struct {
	outcome string
	msg     string
}

func (e *toolError) Error() string { return e.msg }

func fail(outcome, format string, args ...any) *toolError {
	return &toolError{outcome: outcome, msg: fmt.Sprintf(format, args...)}
}

// classify turns an error into a toolError, mapping policy refusals to
// OutcomeDenied.
func classify(err error) *toolError {
	var te *toolError
	if errors.As(err, &te) {
		return te
	}
	if errors.Is(err, errDenied) {
		return &toolError{outcome: OutcomeDenied, msg: "access denied: " + strings.TrimPrefix(err.Error(), errDenied.Error()+": ")}
	}
	return &toolError{outcome: OutcomeError, msg: err.Error()}
}

// Call runs one tool call. It never returns an error: refusals come back as
// a Result whose Output starts with "ERROR:" and nothing on disk changes.
func (t *Tools) Call(ctx context.Context, call chat.ToolCall) Result {
	res, err := t.dispatch(ctx, call)
	if err != nil {
		te := classify(err)
		res = Result{Output: "ERROR: " + te.msg, Outcome: te.outcome}
	}
	t.log.Debug("tool call", "tool", call.Name, "outcome", res.Outcome, "changed", res.Changed)
	if t.observe != nil {
		t.observe(call.Name, res.Outcome)
	}
	return res
}

func (t *Tools) dispatch(ctx context.Context, call chat.ToolCall) (Result, error) {
	switch call.Name {
	case View:
		var a struct {
			Path      string  `json:"path"`
			StartLine flexInt `json:"start_line"`
			EndLine   flexInt `json:"end_line"`
		}
		if err := decodeArgs(call, &a, "path"); err != nil {
			return Result{}, err
		}
		return t.view(a.Path, int(a.StartLine), int(a.EndLine))
	case Search:
		var a struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		if err := decodeArgs(call, &a, "pattern"); err != nil {
			return Result{}, err
		}
		return t.search(ctx, a.Pattern, a.Path)
	case StrReplace:
		var a struct {
			Path   string `json:"path"`
			OldStr string `json:"old_str"`
			NewStr string `json:"new_str"`
		}
		if err := decodeArgs(call, &a, "path", "old_str", "new_str"); err != nil {
			return Result{}, err
		}
		return t.strReplace(ctx, a.Path, a.OldStr, a.NewStr)
	case Insert:
		var a struct {
			Path string  `json:"path"`
			Line flexInt `json:"line"`
			Text string  `json:"text"`
		}
		if err := decodeArgs(call, &a, "path", "line", "text"); err != nil {
			return Result{}, err
		}
		return t.insert(ctx, a.Path, int(a.Line), a.Text)
	case Create:
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if err := decodeArgs(call, &a, "path", "content"); err != nil {
			return Result{}, err
		}
		return t.create(ctx, a.Path, a.Content)
	case Delete:
		var a struct {
			Path string `json:"path"`
		}
		if err := decodeArgs(call, &a, "path"); err != nil {
			return Result{}, err
		}
		return t.delete(a.Path)
	case Finish:
		var a struct {
			Summary string `json:"summary"`
		}
		if err := decodeArgs(call, &a, "summary"); err != nil {
			return Result{}, err
		}
		if strings.TrimSpace(a.Summary) == "" {
			return Result{}, fail(OutcomeError, "finish needs a non-empty summary")
		}
		return Result{Output: "Finished.", Finished: true, Summary: a.Summary, Outcome: OutcomeOK}, nil
	}
	names := make([]string, 0, 7)
	for _, d := range Definitions() {
		names = append(names, d.Name)
	}
	return Result{}, fail(OutcomeError, "unknown tool %q; available: %s", call.Name, strings.Join(names, ", "))
}

// decodeArgs parses the arguments object strictly: unknown fields and
// missing required fields are errors naming the expected fields.
func decodeArgs(call chat.ToolCall, dst any, required ...string) error {
	raw := strings.TrimSpace(call.Arguments)
	if raw == "" {
		raw = "{}"
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &present); err != nil {
		return fail(OutcomeError, "%s: arguments must be a JSON object: %v", call.Name, err)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fail(OutcomeError, "%s: invalid arguments: %v (expected fields: %s)", call.Name, err, fieldList(dst))
	}
	for _, r := range required {
		if v, ok := present[r]; !ok || string(v) == "null" {
			return fail(OutcomeError, "%s: missing required argument %q (expected fields: %s)", call.Name, r, fieldList(dst))
		}
	}
	return nil
}

func fieldList(dst any) string {
	b, _ := json.Marshal(dst)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// flexInt accepts a JSON number or a numeric string ("12"), as models
// sometimes send either.
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		fl, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || fl != float64(int(fl)) {
			return fmt.Errorf("%s is not a whole number", string(b))
		}
		n = int(fl)
	}
	*f = flexInt(n)
	return nil
}

// MarshalJSON lets fieldList see the field.
func (f flexInt) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(int(f))), nil }
