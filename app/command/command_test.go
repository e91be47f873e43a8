package command

import (
	"strings"
	"testing"
	"unicode"
)

const word = "/selfcode"

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		word string // "" means the default word
		ok   bool
		want Command
	}{
		{name: "bare", body: "/selfcode", ok: true, want: Command{Verb: VerbRun}},
		{name: "bare with trailing space", body: "/selfcode   ", ok: true, want: Command{Verb: VerbRun}},
		{name: "run with instructions", body: "/selfcode fix the bug", ok: true, want: Command{VerbRun, "fix the bug"}},
		{name: "multi-line run", body: "/selfcode fix the bug\nmore detail\n\n- bullet", ok: true,
			want: Command{VerbRun, "fix the bug\nmore detail\n\n- bullet"}},
		{name: "instructions start on the next line", body: "/selfcode\n\n  indented code\n- item\n\n\n", ok: true,
			want: Command{VerbRun, "  indented code\n- item"}},
		{name: "plan", body: "/selfcode plan fix the x", ok: true, want: Command{VerbPlan, "fix the x"}},
		{name: "plan bare", body: "/selfcode plan", ok: true, want: Command{Verb: VerbPlan}},
		{name: "fix-ci", body: "/selfcode fix-ci keep the API", ok: true, want: Command{VerbFixCI, "keep the API"}},
		{name: "fix-ci any case", body: "/selfcode Fix-CI", ok: true, want: Command{Verb: VerbFixCI}},
		{name: "plan multi-line", body: "/selfcode plan\nstep one\nstep two", ok: true, want: Command{VerbPlan, "step one\nstep two"}},
		{name: "subcommand case-insensitive", body: "/selfcode PLAN Fix It", ok: true, want: Command{VerbPlan, "Fix It"}},
		{name: "subcommand whole word only", body: "/selfcode planning docs", ok: true, want: Command{VerbRun, "planning docs"}},
		{name: "subcommand tab-separated", body: "/selfcode\tplan\tx", ok: true, want: Command{VerbPlan, "x"}},
		{name: "subcommand on the next line is instructions", body: "/selfcode\nplan", ok: true, want: Command{VerbRun, "plan"}},
		{name: "run is not a subcommand", body: "/selfcode run the tests", ok: true, want: Command{VerbRun, "run the tests"}},
		{name: "cancel", body: "/selfcode cancel", ok: true, want: Command{Verb: VerbCancel}},
		{name: "cancel keeps the rest", body: "/selfcode cancel please\nthanks", ok: true, want: Command{VerbCancel, "please\nthanks"}},
		{name: "retry", body: "/selfcode retry", ok: true, want: Command{Verb: VerbRetry}},
		{name: "status", body: "/selfcode Status", ok: true, want: Command{Verb: VerbStatus}},
		{name: "help", body: "/selfcode help", ok: true, want: Command{Verb: VerbHelp}},
		{name: "leading blank lines and spaces", body: "\n  \n\t  /selfcode retry\n", ok: true, want: Command{Verb: VerbRetry}},
		{name: "crlf", body: "/selfcode plan do it\r\nline two\r\n\r\n", ok: true, want: Command{VerbPlan, "do it\nline two"}},
		{name: "bare crlf", body: "/selfcode\r\n", ok: true, want: Command{Verb: VerbRun}},
		{name: "lone cr", body: "/selfcode status\rmore", ok: true, want: Command{VerbStatus, "more"}},
		{name: "bom", body: "\uFEFF/selfcode help", ok: true, want: Command{Verb: VerbHelp}},
		{name: "unicode kept", body: "/selfcode ajoute «éè» 🚀\n日本語", ok: true, want: Command{VerbRun, "ajoute «éè» 🚀\n日本語"}},
		{name: "inner spacing kept", body: "/selfcode  two  spaces \n  indented  \n", ok: true, want: Command{VerbRun, "two  spaces\n  indented  "}},
		{name: "nbsp after word", body: "/selfcode\u00a0plan x", ok: true, want: Command{VerbPlan, "x"}},
		{name: "custom word", body: "/bot plan x", word: "/bot", ok: true, want: Command{VerbPlan, "x"}},
		{name: "word repeated in instructions", body: "/selfcode /selfcode x", ok: true, want: Command{VerbRun, "/selfcode x"}},

		{name: "empty", body: "", ok: false},
		{name: "blank", body: " \n\t\r\n", ok: false},
		{name: "longer word", body: "/selfcodex do it", ok: false},
		{name: "word with suffix punctuation", body: "/selfcode: do it", ok: false},
		{name: "case-sensitive word", body: "/SelfCode plan", ok: false},
		{name: "command after text", body: "Thanks!\n\n/selfcode fix it", ok: false},
		{name: "quoted command", body: "> /selfcode fix it", ok: false},
		{name: "inline mention", body: "please /selfcode fix it", ok: false},
		{name: "code fence first", body: "```\n/selfcode\n```", ok: false},
		{name: "other word configured", body: "/selfcode plan", word: "/bot", ok: false},
		{name: "bom only", body: "\uFEFF", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.word
			if w == "" {
				w = word
			}
			got, ok := Parse(tt.body, w)
			if ok != tt.ok {
				t.Fatalf("Parse(%q) ok = %v, want %v (%v)", tt.body, ok, tt.ok, got)
			}
			if !ok {
				if got != (Command{}) {
					t.Errorf("not a command but got %v", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

func TestParseEmptyWord(t *testing.T) {
	if c, ok := Parse("/selfcode", ""); ok {
		t.Errorf("empty word matched: %v", c)
	}
}

func TestVerbs(t *testing.T) {
	vs := Verbs()
	if len(vs) != 7 {
		t.Fatalf("Verbs() = %v", vs)
	}
	usage := Usage("/bot")
	for _, v := range vs {
		if !v.Valid() || v.Summary() == "" {
			t.Errorf("verb %q: Valid=%v Summary=%q", v, v.Valid(), v.Summary())
		}
		if v != VerbRun && !strings.Contains(usage, "/bot "+string(v)) {
			t.Errorf("usage lacks %q:\n%s", v, usage)
		}
		// Each verb's usage line parses back to that verb.
		body := "/bot " + string(v)
		if v == VerbRun {
			body = "/bot"
		}
		if c, ok := Parse(body, "/bot"); !ok || c.Verb != v {
			t.Errorf("Parse(%q) = %v, %v", body, c, ok)
		}
	}
	if Verb("deploy").Valid() || Verb("").Valid() {
		t.Error("unknown verb reported valid")
	}
}

func TestCommandString(t *testing.T) {
	tests := []struct {
		c    Command
		want string
	}{
		{Command{Verb: VerbHelp}, "help"},
		{Command{VerbPlan, "fix \"x\"\nnow"}, `plan "fix \"x\"\nnow"`},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

// firstLineStartsWithWord is an independent statement of the trigger rule.
func firstLineStartsWithWord(body, word string) bool {
	body = strings.TrimPrefix(body, "\uFEFF")
	for _, l := range strings.FieldsFunc(body, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		return strings.HasPrefix(strings.TrimLeftFunc(l, unicode.IsSpace), word)
	}
	return false
}

// FuzzParse's seed corpus is testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add("/bot plan x", "/bot")
	f.Add("/selfcode help", "")
	f.Fuzz(func(t *testing.T, body, w string) {
		c, ok := Parse(body, w)
		c2, ok2 := Parse(body, w)
		if c != c2 || ok != ok2 {
			t.Fatalf("not deterministic: %v,%v vs %v,%v", c, ok, c2, ok2)
		}
		if !ok {
			if c != (Command{}) {
				t.Fatalf("not a command but got %v", c)
			}
			return
		}
		if w == "" || !firstLineStartsWithWord(body, w) {
			t.Fatalf("Parse(%q, %q) accepted a body whose first non-blank line does not start with the word", body, w)
		}
		if !c.Verb.Valid() {
			t.Fatalf("invalid verb %q", c.Verb)
		}
		// The instructions come from after the word on the command line: they
		// never include the word's own line prefix.
		norm := normalize(body)
		at := strings.Index(norm, w)
		if at < 0 {
			t.Fatalf("word %q not in %q", w, norm)
		}
		after := norm[at+len(w):]
		for _, l := range strings.Split(c.Instructions, "\n") {
			if !strings.Contains(after, l) {
				t.Fatalf("instruction line %q is not text after the command word in %q", l, body)
			}
		}
		// Round trip: the command line alone plus the instructions on the
		// following lines parses to the same command, so the instructions
		// hold nothing of the command line's prefix.
		if !strings.HasPrefix(w, "\uFEFF") {
			line := w
			if c.Verb != VerbRun {
				line += " " + string(c.Verb)
			}
			if back, ok := Parse(line+"\n"+c.Instructions, w); !ok || back != c {
				t.Fatalf("round trip of %v gave %v, %v", c, back, ok)
			}
		}
		if c.Instructions != "" {
			ls := strings.Split(c.Instructions, "\n")
			if isBlank(ls[0]) || isBlank(ls[len(ls)-1]) {
				t.Fatalf("instructions %q start or end with a blank line", c.Instructions)
			}
		}
		if strings.Contains(c.Instructions, "\r") {
			t.Fatalf("instructions %q keep a carriage return", c.Instructions)
		}
	})
}
