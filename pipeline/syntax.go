package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/selfcode/selfcode/pipeline/verify"
)

// errNoSandbox: the syntax check runs in the job's sandbox, which is not
// started yet (or is gone).
var errNoSandbox = errors.New("no sandbox to check syntax in")

// errNoChecker: the sandbox image lacks the language's toolchain.
var errNoChecker = errors.New("the sandbox has no syntax checker for this language")

// syntaxLang is a language the sandbox can check.
type syntaxLang int

const (
	langNone syntaxLang = iota
	langPython
	langJS // plain JavaScript: node --check
	langTS // TypeScript and JSX: TypeScript's parser
)

func languageOf(p string) syntaxLang {
	switch path.Ext(p) {
	case ".py":
		return langPython
	case ".js", ".mjs", ".cjs":
		return langJS
	case ".ts", ".tsx", ".mts", ".cts", ".jsx":
		return langTS
	}
	return langNone
}

// Checker programs. $1 is the file to check, $2 the name errors show.
const (
	pythonCheck = `python3 -c 'import sys
try:
    compile(open(sys.argv[1], "rb").read(), sys.argv[2], "exec")
except (SyntaxError, ValueError) as e:
    print("%s:%s:%s: %s" % (sys.argv[2], getattr(e, "lineno", 0) or 0, getattr(e, "offset", 0) or 0, getattr(e, "msg", str(e))))
    sys.exit(1)' "$1" "$2"`
	jsCheck = `node --check "$1"`
	tsCheck = `node -e 'let ts
try { ts = require("typescript") } catch (e) { process.exit(127) }
const [file, name] = process.argv.slice(1)
const src = require("fs").readFileSync(file, "utf8")
const out = ts.transpileModule(src, {fileName: name, reportDiagnostics: true, compilerOptions: {jsx: ts.JsxEmit.Preserve}})
const errs = (out.diagnostics || []).filter(d => d.category === ts.DiagnosticCategory.Error)
for (const d of errs) {
  const p = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null
  console.log(name + (p ? ":" + (p.line + 1) + ":" + (p.character + 1) : "") + ": " + ts.flattenDiagnosticMessageText(d.messageText, " "))
}
process.exit(errs.length ? 1 : 0)' "$1" "$2"`
)

// sandboxSyntax checks Python, JavaScript and TypeScript edits with the
// languages' own parsers inside the job's sandbox, never on the host: the
// candidate content is copied next to the file it would replace (so the
// package's module type applies), checked, and removed.
type sandboxSyntax struct {
	prep *preparation // the job's sandbox; checks wait until it is ready
	seq  atomic.Int64
}

func (c *sandboxSyntax) Checks(p string) bool { return languageOf(p) != langNone }

func (c *sandboxSyntax) Check(ctx context.Context, rel string, content []byte) ([]string, error) {
	if c.prep == nil {
		return nil, errNoSandbox
	}
	// A check copies model-written content in: only once setup's network
	// is gone and the baseline has run, which it must not see.
	env, err := c.prep.wait(ctx)
	if err != nil || env == nil || env.sess == nil {
		return nil, errNoSandbox
	}
	script := map[syntaxLang]string{langPython: pythonCheck, langJS: jsCheck, langTS: tsCheck}[languageOf(rel)]
	if script == "" {
		return nil, errNoChecker
	}
	ext := path.Ext(rel)
	tmpRel := path.Join(path.Dir(rel), fmt.Sprintf("%s.selfcode-syntax-%d%s", strings.TrimSuffix(path.Base(rel), ext), c.seq.Add(1), ext))
	host, err := os.MkdirTemp("", "selfcode-syntax-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(host)
	full := filepath.Join(host, filepath.FromSlash(tmpRel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(full, content, 0o644); err != nil {
		return nil, err
	}
	if err := env.sess.CopyFiles(ctx, host, []string{tmpRel}, nil); err != nil {
		return nil, fmt.Errorf("copy %s into the sandbox: %w", rel, err)
	}
	file := "/work/" + tmpRel
	run := fmt.Sprintf("set -- %s %s; %s; rc=$?; rm -f -- \"$1\"; exit $rc", verify.ShellQuote(file), verify.ShellQuote(rel), script)
	out, err := env.sess.Exec(ctx, verify.Command{Name: "syntax", Run: run, Timeout: time.Minute, OutputBytes: 64 << 10})
	if err != nil {
		return nil, err
	}
	switch {
	case out.ExitCode == 0:
		return nil, nil
	case out.ExitCode == 126 || out.ExitCode == 127 || out.TimedOut:
		return nil, errNoChecker
	}
	return syntaxErrors(out.Output, file, rel), nil
}

// syntaxErrors keeps the meaningful lines of a checker's output, with the
// temporary file's name replaced by the real one.
func syntaxErrors(output, tmp, rel string) []string {
	var errs []string
	for _, l := range strings.Split(strings.ReplaceAll(output, tmp, rel), "\n") {
		if l = strings.TrimRight(l, " \r"); strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "at ") || strings.HasPrefix(l, "Node.js v") {
			continue
		}
		errs = append(errs, l)
		if len(errs) == 12 {
			break
		}
	}
	if len(errs) == 0 {
		errs = []string{rel + ": the syntax check failed"}
	}
	return errs
}
