package verify

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/selfcode/selfcode/internal/utf8cut"
)

// Summary defaults.
const (
	DefaultSummaryTokens = 3000
	DefaultTestLines     = 20
	charsPerToken        = 4
	commandOutputLines   = 40
	maxPreExistingListed = 15
)

// SummaryOptions tunes Summarize.
type SummaryOptions struct {
	// MaxTokens is the budget (about 4 characters per token); default
	// DefaultSummaryTokens.
	MaxTokens int
	// WorkDir is the checkout's absolute path where the commands ran (for
	// example "/work"); it is stripped from paths. Other absolute paths
	// under a common directory (a /tmp checkout) are detected and
	// stripped too.
	WorkDir string
	// TestLines is how many lines of each failing test's output to show;
	// default DefaultTestLines.
	TestLines int
}

// piece is one removable part of a summary.
type piece struct {
	section  string   // heading shown when any piece of the section is kept
	prio     int      // higher is more important; lower is cut first
	variants []string // full text first, then shorter versions
	v        int
	removed  bool
	cutWhat  label // what the cut note calls it
}

// label names a kind of piece in the cut note, in the singular and plural;
// equal forms name a single piece ("the pre-existing failures list").
type label struct{ one, many string }

var (
	labelRegression  = label{"regression", "regressions"}
	labelCompiler    = label{"compiler error", "compiler errors"}
	labelTestOutput  = label{"test's output", "tests' output"}
	labelCmdOutput   = label{"command's output", "commands' output"}
	labelPreExisting = label{"the pre-existing failures list", "the pre-existing failures list"}
	labelNote        = label{"note", "notes"}
)

func (p *piece) text() string { return p.variants[p.v] }

func (p *piece) canShorten() bool { return p.v+1 < len(p.variants) }

// Summarize condenses a failed verification for the fixer model: the
// regressions first, then their compiler and vet errors as
// "file:line: message", then the first lines of each regressed test's
// output, then the output of commands that failed with nothing more
// specific, and last, briefly, the failures the base has too. Paths under
// the work directory, test timings, stack-frame offsets and ANSI escapes are
// stripped. To fit the budget the least important parts are shortened,
// then cut, first (notes, the pre-existing list, command output, test
// output, compiler errors, and last the regressions list), and a closing
// line says what was cut. The result never exceeds MaxTokens*4 bytes.
func Summarize(cmp Comparison, head Run, opts SummaryOptions) string {
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultSummaryTokens
	}
	if opts.TestLines <= 0 {
		opts.TestLines = DefaultTestLines
	}
	budget := opts.MaxTokens * charsPerToken
	cl := newCleaner(opts.WorkDir, head)

	var pieces []*piece
	add := func(section string, prio int, cutWhat label, variants ...string) {
		pieces = append(pieces, &piece{section: section, prio: prio, variants: variants, cutWhat: cutWhat})
	}

	nReg := len(cmp.Regressions)
	var header string
	switch {
	case nReg > 0:
		var names []string
		for _, c := range cmp.Commands {
			if c.Class == ClassRegression {
				names = append(names, c.Name)
			}
		}
		header = fmt.Sprintf("Verification failed: %d %s in %s (failures the base commit does not have). Fix these.",
			nReg, plural(nReg, "regression", "regressions"), strings.Join(names, ", "))
	case len(head.Commands) == 0:
		header = "No verification commands ran."
	case cmp.Verified && len(cmp.PreExisting) > 0:
		header = "No regressions: every remaining failure also fails on the base commit."
	case cmp.Verified:
		header = "Verification passed."
	default:
		header = "Verification did not pass."
	}

	// Regressions, one line each; compiler errors are counted here and
	// listed in their own section.
	for _, cc := range cmp.Commands {
		nDiag := 0
		for _, f := range cc.Regressions {
			if f.Kind == KindDiagnostic {
				nDiag++
				continue
			}
			add("Regressions:", 100, labelRegression, "- "+cl.line(f.String()))
		}
		if nDiag > 0 {
			add("Regressions:", 100, labelRegression, fmt.Sprintf("- %s: %d new compiler or vet %s (below)", cc.Name, nDiag, plural(nDiag, "error", "errors")))
		}
	}

	seenDiag := map[string]bool{}
	for i, cc := range cmp.Commands {
		hc, ok := headCommand(head, cc.Name, i)
		if !ok || len(cc.Regressions) == 0 {
			continue
		}
		for _, d := range hc.Diagnostics {
			// regressionKeys is nil for a Comparison decoded from JSON;
			// then every diagnostic of a regressed command is shown.
			if cc.regressionKeys != nil && !cc.regressionKeys[string(KindDiagnostic)+"\x00"+d.key()] {
				continue
			}
			s := cl.line(d.String())
			if seenDiag[s] {
				continue
			}
			seenDiag[s] = true
			add("Compiler and vet errors:", 90, labelCompiler, s)
		}
	}

	for i, cc := range cmp.Commands {
		hc, ok := headCommand(head, cc.Name, i)
		if !ok {
			continue
		}
		for _, f := range cc.Regressions {
			if f.Kind != KindTest || hc.Tests == nil {
				continue
			}
			lines := cl.lines(hc.Tests.Output[f.Test])
			title := fmt.Sprintf("--- %s (%s)", f.Test.Name, f.Test.Suite)
			full := testBlock(title, lines, opts.TestLines)
			add("Failing test output:", 70, labelTestOutput, full, testBlock(title, lines, min(8, opts.TestLines)), testBlock(title, lines, 3))
		}
	}

	for i, cc := range cmp.Commands {
		hc, ok := headCommand(head, cc.Name, i)
		if !ok || !needsOutput(cc, hc) {
			continue
		}
		lines := cl.lines(outputLines(hc.Output))
		title := fmt.Sprintf("$ %s  (exit status %d%s)", hc.Run, hc.ExitCode, stopReason(hc))
		add("Command output:", 60, labelCmdOutput,
			tailBlock(title, lines, commandOutputLines), tailBlock(title, lines, 15), tailBlock(title, lines, 5))
	}

	if len(cmp.PreExisting) > 0 {
		full := briefList(cmp.PreExisting, len(cmp.PreExisting))
		short := briefList(cmp.PreExisting, maxPreExistingListed)
		count := fmt.Sprintf("%d %s", len(cmp.PreExisting), plural(len(cmp.PreExisting), "failure", "failures"))
		add("Also failing on the base, not your concern:", 20, labelPreExisting, cl.line(full), cl.line(short), count)
	}
	for _, n := range cmp.Notes {
		add("Notes:", 10, labelNote, "- "+cl.line(n))
	}

	return fit(header, pieces, budget)
}

// fit renders header and pieces within budget characters, cutting the
// least important (and, among equals, the last) pieces first.
func fit(header string, pieces []*piece, budget int) string {
	length := func() int {
		n := len(header) + 1
		sections := map[string]bool{}
		for _, p := range pieces {
			if p.removed {
				continue
			}
			if !sections[p.section] {
				sections[p.section] = true
				n += len(p.section) + 2
			}
			n += len(p.text()) + 1
		}
		return n
	}
	cutting := false
	total := length()
	for total > budget {
		// The lowest priority goes first; within it, shorten every piece
		// before removing any, starting from the last.
		var victim *piece
		for _, p := range pieces {
			if p.removed {
				continue
			}
			switch {
			case victim == nil || p.prio < victim.prio:
				victim = p
			case p.prio == victim.prio && (p.canShorten() || !victim.canShorten()):
				victim = p
			}
		}
		if victim == nil {
			break
		}
		if victim.canShorten() {
			victim.v++
		} else {
			victim.removed = true
		}
		cutting = true
		total = length() + len(cutNote(pieces))
	}

	var b strings.Builder
	b.WriteString(header)
	b.WriteByte('\n')
	section := ""
	for _, p := range pieces {
		if p.removed {
			continue
		}
		if p.section != section {
			section = p.section
			b.WriteString("\n" + section + "\n")
		}
		b.WriteString(p.text())
		b.WriteByte('\n')
	}
	if cutting {
		b.WriteString(cutNote(pieces))
	}
	out := b.String()
	if len(out) > budget {
		// Not even the header and the note fit; cut mid-text.
		const ellipsis = "\n…\n"
		out = utf8cut.Cut(out, max(budget-len(ellipsis), 0)) + ellipsis
	}
	return out
}

// cutNote says what fit left out or shortened.
func cutNote(pieces []*piece) string {
	var order []label
	removed, shortened := map[label]int{}, map[label]int{}
	for _, p := range pieces {
		if _, ok := removed[p.cutWhat]; !ok {
			order = append(order, p.cutWhat)
			removed[p.cutWhat] = 0
		}
		switch {
		case p.removed:
			removed[p.cutWhat]++
		case p.v > 0:
			shortened[p.cutWhat]++
		}
	}
	describe := func(counts map[label]int) string {
		var parts []string
		for _, l := range order {
			switch n := counts[l]; {
			case n == 0:
			case l.one == l.many:
				parts = append(parts, l.one)
			default:
				parts = append(parts, fmt.Sprintf("%d %s", n, plural(n, l.one, l.many)))
			}
		}
		return strings.Join(parts, ", ")
	}
	note := "\n[Cut to fit the budget."
	if s := describe(removed); s != "" {
		note += " Left out: " + s + "."
	}
	if s := describe(shortened); s != "" {
		note += " Shortened: " + s + "."
	}
	return note + "]\n"
}

func headCommand(head Run, name string, i int) (CommandResult, bool) {
	if i < len(head.Commands) && head.Commands[i].Name == name {
		return head.Commands[i], true
	}
	for _, c := range head.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return CommandResult{}, false
}

// needsOutput reports whether a regressed command has failures that its
// diagnostics and test output do not explain.
func needsOutput(cc CommandComparison, hc CommandResult) bool {
	for _, f := range cc.Regressions {
		switch f.Kind {
		case KindCommand:
			return true
		case KindPackage:
			if len(hc.Diagnostics) == 0 {
				return true
			}
		}
	}
	return false
}

func stopReason(c CommandResult) string {
	switch {
	case c.TimedOut:
		return ", timed out"
	case c.OOMKilled:
		return ", out of memory"
	case c.OutputStopped:
		return ", stopped: too much output"
	}
	return ""
}

func testBlock(title string, lines []string, n int) string {
	var b strings.Builder
	b.WriteString(title)
	shown := 0
	for _, l := range lines {
		if shown == n {
			break
		}
		b.WriteString("\n" + l)
		shown++
	}
	if rest := len(lines) - shown; rest > 0 {
		fmt.Fprintf(&b, "\n    … %d more %s", rest, plural(rest, "line", "lines"))
	}
	return b.String()
}

func tailBlock(title string, lines []string, n int) string {
	var b strings.Builder
	b.WriteString(title)
	start := max(len(lines)-n, 0)
	if start > 0 {
		fmt.Fprintf(&b, "\n… %d earlier %s", start, plural(start, "line", "lines"))
	}
	for _, l := range lines[start:] {
		b.WriteString("\n" + l)
	}
	return b.String()
}

func briefList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

func outputLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

var (
	// ansiRE matches CSI and OSC escape sequences.
	ansiRE = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)
	// timingRE matches test timings like " (0.01s)" or " (1m30s)".
	timingRE = regexp.MustCompile(` \((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+\)`)
	// pkgTimeRE matches the duration ending "ok  \tpkg\t0.123s" lines.
	pkgTimeRE = regexp.MustCompile(`^((?:ok|FAIL)\s+\S+)\s+\d+(?:\.\d+)?s(\s.*)?$`)
	// frameOffsetRE matches the "+0x1d" ending a stack frame line.
	frameOffsetRE = regexp.MustCompile(`(\.go:\d+) \+0x[0-9a-f]+$`)
	// goBuildRE matches the go command's temporary build directories.
	goBuildRE = regexp.MustCompile(`/tmp/go-build\d+/b\d+/`)
	// absGoPathRE matches absolute paths of Go files.
	absGoPathRE = regexp.MustCompile(`(/[^\s:"'()\[\]]+)/[^/\s:"'()\[\]]+\.go\b`)
)

// cleaner strips noise from text shown to the model.
type cleaner struct {
	prefixes []*regexp.Regexp // directory prefixes to strip, at a path's start
}

func newCleaner(workDir string, head Run) cleaner {
	var c cleaner
	var known []string
	if wd := strings.TrimRight(workDir, "/"); wd != "" {
		known = append(known, wd+"/")
	}
	if p := detectPrefix(head, known); p != "" {
		known = append(known, p)
	}
	for _, p := range known {
		c.prefixes = append(c.prefixes, regexp.MustCompile(`(^|[\s"'(\[=:,])`+regexp.QuoteMeta(p)))
	}
	return c
}

// isFrameFunc reports whether a line is the function line of a stack
// frame (the line before its tab-indented file line).
func isFrameFunc(l string) bool {
	return l != "" && !strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "goroutine ") && !strings.Contains(l, ": ")
}

// detectPrefix finds the common directory of the absolute Go file paths in
// the head's output that are not under a stripped prefix, GOROOT or the
// module cache; it is returned when it is at least two levels deep.
func detectPrefix(head Run, known []string) string {
	var dirs []string
	collect := func(s string) {
		for _, m := range absGoPathRE.FindAllStringSubmatch(s, -1) {
			d := m[1] + "/"
			if goBuildRE.MatchString(d) || thirdParty(d) || hasAnyPrefix(d, known) {
				continue
			}
			dirs = append(dirs, d)
		}
	}
	for _, c := range head.Commands {
		collect(c.Output)
		if c.Tests != nil {
			for _, lines := range c.Tests.Output {
				for _, l := range lines {
					collect(l)
				}
			}
		}
		for _, d := range c.Diagnostics {
			collect(d.File)
		}
	}
	if len(dirs) == 0 {
		return ""
	}
	common := strings.Split(strings.TrimSuffix(dirs[0], "/"), "/")
	for _, d := range dirs[1:] {
		parts := strings.Split(strings.TrimSuffix(d, "/"), "/")
		n := 0
		for n < len(common) && n < len(parts) && common[n] == parts[n] {
			n++
		}
		common = common[:n]
	}
	// common[0] is "" (the leading slash); require two named levels.
	if len(common) < 3 {
		return ""
	}
	return "/" + path.Join(common[1:]...) + "/"
}

func thirdParty(dir string) bool {
	return strings.Contains(dir, "/pkg/mod/") || strings.Contains(dir, "/go/src/runtime/") ||
		strings.Contains(dir, "/go/src/testing/") || strings.HasPrefix(dir, "/usr/local/go/") ||
		strings.HasPrefix(dir, "/usr/lib/go") || strings.Contains(dir, "/sdk/go")
}

func hasAnyPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

func (c cleaner) line(s string) string {
	s = ansiRE.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r", "")
	for _, re := range c.prefixes {
		s = re.ReplaceAllString(s, "$1")
	}
	s = goBuildRE.ReplaceAllString(s, "")
	s = timingRE.ReplaceAllString(s, "")
	s = pkgTimeRE.ReplaceAllString(s, "$1$2")
	s = frameOffsetRE.ReplaceAllString(s, "$1")
	return s
}

// lines cleans lines and drops stack frames inside the Go runtime and
// testing packages (the function line and its file line), which say
// nothing about the repository's code.
func (c cleaner) lines(in []string) []string {
	out := make([]string, 0, len(in))
	for _, l := range in {
		if strings.HasPrefix(l, "\t") && thirdParty(strings.TrimSpace(l)) {
			if n := len(out); n > 0 && isFrameFunc(out[n-1]) {
				out = out[:n-1]
			}
			continue
		}
		out = append(out, c.line(l))
	}
	return out
}
