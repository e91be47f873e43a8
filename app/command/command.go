package command

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Verb is what a command asks for.
type Verb string

// The verbs of contract section 4.
const (
	// VerbRun runs the pipeline; it is the verb when no subcommand is named.
	VerbRun Verb = "run"
	// VerbPlan plans only and posts the plan as a comment.
	VerbPlan Verb = "plan"
	// VerbCancel cancels the queued, scheduled or running job.
	VerbCancel Verb = "cancel"
	// VerbRetry runs the last job again, as the same job.
	VerbRetry Verb = "retry"
	// VerbStatus replies with the job's state.
	VerbStatus Verb = "status"
	// VerbHelp replies with usage.
	VerbHelp Verb = "help"
	// VerbFixCI runs the pipeline on a pull request with its failing checks
	// as the task.
	VerbFixCI Verb = "fix-ci"
)

// Verbs lists every verb in the order help text shows them.
func Verbs() []Verb {
	return []Verb{VerbRun, VerbPlan, VerbFixCI, VerbCancel, VerbRetry, VerbStatus, VerbHelp}
}

// Valid reports whether v is one of Verbs.
func (v Verb) Valid() bool {
	switch v {
	case VerbRun, VerbPlan, VerbFixCI, VerbCancel, VerbRetry, VerbStatus, VerbHelp:
		return true
	}
	return false
}

// Summary is a one-line description of the verb for help text.
func (v Verb) Summary() string {
	switch v {
	case VerbRun:
		return "run the pipeline for this issue or pull request, with optional instructions (may span lines)"
	case VerbPlan:
		return "plan only: post the plan as a comment, change no code"
	case VerbCancel:
		return "cancel the queued, scheduled or running job"
	case VerbRetry:
		return "run the last job again"
	case VerbStatus:
		return "reply with the job's state"
	case VerbHelp:
		return "reply with this usage"
	case VerbFixCI:
		return "on a pull request: fix its failing checks (their output is the task)"
	}
	return ""
}

// Usage renders help text, as Markdown, for the given command word.
func Usage(word string) string {
	var b strings.Builder
	b.WriteString("Usage:\n\n")
	for _, v := range Verbs() {
		b.WriteString("- `")
		b.WriteString(word)
		switch v {
		case VerbRun:
			b.WriteString(" [instructions…]")
		case VerbPlan:
			b.WriteString(" plan [instructions…]")
		default:
			b.WriteString(" " + string(v))
		}
		b.WriteString("` — ")
		b.WriteString(v.Summary())
		b.WriteByte('\n')
	}
	return b.String()
}

// Command is a parsed comment command.
type Command struct {
	Verb Verb
	// Instructions is the text after the verb: the rest of the command line
	// and every following line, without leading or trailing blank lines.
	// Cancel, retry, status and help ignore it.
	Instructions string
}

// String renders the command for logs, e.g. `plan "fix the x"`.
func (c Command) String() string {
	if c.Instructions == "" {
		return string(c.Verb)
	}
	return string(c.Verb) + " " + strconv.Quote(c.Instructions)
}

// Parse reads a comment body. It is a command when its first non-blank line,
// after leading whitespace, starts with word followed by whitespace or the end
// of the line; word matches case-sensitively, subcommands case-insensitively
// and only as whole words. A leading byte-order mark is ignored and \r\n
// counts as a newline. An empty word never matches.
func Parse(body string, word string) (Command, bool) {
	if word == "" {
		return Command{}, false
	}
	lines := strings.Split(normalize(body), "\n")
	first := 0
	for first < len(lines) && isBlank(lines[first]) {
		first++
	}
	if first == len(lines) {
		return Command{}, false
	}
	line := strings.TrimLeftFunc(lines[first], unicode.IsSpace)
	rest, ok := strings.CutPrefix(line, word)
	if !ok {
		return Command{}, false
	}
	if r, _ := utf8.DecodeRuneInString(rest); rest != "" && !unicode.IsSpace(r) {
		return Command{}, false
	}
	rest = strings.TrimSpace(rest)

	cmd := Command{Verb: VerbRun}
	next, after := splitWord(rest)
	// "run" is not a subcommand: `/selfcode run the tests` runs with those
	// instructions.
	switch v := Verb(strings.ToLower(next)); v {
	case VerbPlan, VerbFixCI, VerbCancel, VerbRetry, VerbStatus, VerbHelp:
		cmd.Verb = v
		rest = after
	}
	cmd.Instructions = joinTrimmed(rest, lines[first+1:])
	return cmd, true
}

// normalize drops a leading byte-order mark and turns \r\n and lone \r into \n.
func normalize(s string) string {
	s = strings.TrimPrefix(s, "\uFEFF")
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// splitWord returns s's first whitespace-delimited word and what follows it,
// trimmed.
func splitWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// joinTrimmed joins first and more with newlines and drops leading and
// trailing blank lines, keeping everything in between as written.
func joinTrimmed(first string, more []string) string {
	all := make([]string, 0, len(more)+1)
	all = append(all, first)
	all = append(all, more...)
	start, end := 0, len(all)
	for start < end && isBlank(all[start]) {
		start++
	}
	for end > start && isBlank(all[end-1]) {
		end--
	}
	return strings.Join(all[start:end], "\n")
}
