package verify

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Diagnostic is one compiler or vet error.
type Diagnostic struct {
	Package string `json:"package,omitempty"` // from the preceding "# pkg" header
	File    string `json:"file"`              // as printed (relative to the command's directory, or absolute)
	Line    int    `json:"line"`
	Col     int    `json:"col,omitempty"`
	Message string `json:"message"`
}

// String returns "file:line: message".
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d: %s", d.File, d.Line, d.Message)
}

// key identifies the diagnostic without line numbers, which shift when code
// is edited above it.
func (d Diagnostic) key() string {
	return d.File + ": " + posInMessageRE.ReplaceAllString(d.Message, "$1")
}

// diagRE matches "./x.go:12:3: msg", "x.go:12: msg", "pkg/x.go:12:3: msg",
// "/abs/x.go:12:3: msg", "go.mod:3: msg", optionally after "vet: ". Lines
// starting with whitespace (test log lines, stack frames) never match.
var diagRE = regexp.MustCompile(`^(?:vet: )?([^\s:]*[^\s:/]\.(?:go|mod|sum|work|s|c|h)):(\d+)(?::(\d+))?: (.+)$`)

// posInMessageRE finds positions inside a message ("declared at x.go:10:6").
var posInMessageRE = regexp.MustCompile(`(\.go):\d+(?::\d+)?`)

// ParseDiagnostics finds compiler and vet errors in output, de-duplicated
// by file, line and message, in order of appearance.
func ParseDiagnostics(output string) []Diagnostic {
	var out []Diagnostic
	seen := map[string]bool{}
	pkg := ""
	for line := range strings.SplitSeq(output, "\n") {
		line = strings.TrimRight(line, "\r")
		if h, ok := strings.CutPrefix(line, "# "); ok {
			if !strings.HasPrefix(h, "[") {
				p, _, _ := strings.Cut(h, " ")
				pkg = p
			}
			continue
		}
		m := diagRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ln, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		col, _ := strconv.Atoi(m[3])
		d := Diagnostic{Package: pkg, File: m[1], Line: ln, Col: col, Message: m[4]}
		k := d.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}
