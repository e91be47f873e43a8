package tools

import (
	"bytes"
	"context"
	"errors"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
)

// parseErrors parses Go source and returns its syntax errors as
// "path:line:col: message".
func parseErrors(rel string, src []byte) []string {
	fset := token.NewFileSet()
	_, err := parser.ParseFile(fset, rel, src, parser.AllErrors|parser.SkipObjectResolution)
	if err == nil {
		return nil
	}
	var list scanner.ErrorList
	if errors.As(err, &list) {
		out := make([]string, 0, len(list))
		for _, e := range list {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// checkGo vets an edit of a Go file. before is nil for a new file. It
// refuses the edit when it adds syntax errors (the file parsed before, or
// now has more errors) and otherwise returns the content to write: gofmt'ed
// when the result parses and the original was gofmt-clean (or new), so an
// edit never reformats a file its authors keep unformatted.
func checkGo(rel string, before, after []byte) ([]byte, bool, error) {
	errsAfter := parseErrors(rel, after)
	if len(errsAfter) > 0 {
		errsBefore := 0
		if before != nil {
			errsBefore = len(parseErrors(rel, before))
		}
		if errsBefore == 0 || len(errsAfter) > errsBefore {
			shown := errsAfter
			if len(shown) > 10 {
				shown = append(shown[:10:10], "…")
			}
			return nil, false, fail(OutcomeSyntaxReverted,
				"the edit would break Go syntax, so it was not applied:\n%s\nFix the edit and try again.", strings.Join(shown, "\n"))
		}
		return after, false, nil
	}
	if before != nil {
		if f, err := format.Source(before); err != nil || !bytes.Equal(f, before) {
			return after, false, nil
		}
	}
	formatted, err := format.Source(after)
	if err != nil {
		return after, false, nil
	}
	return formatted, !bytes.Equal(formatted, after), nil
}

// checkSyntax refuses an edit that adds syntax errors to a file in a
// language the SyntaxChecker knows: the file parsed before (or is new), or
// it now has more errors. When the checker cannot check, the edit goes
// through (verification still runs the real toolchain) and it is logged.
func (t *Tools) checkSyntax(ctx context.Context, rel string, before, after []byte) error {
	errsAfter, err := t.syntax.Check(ctx, rel, after)
	if err != nil {
		t.log.Warn("syntax check unavailable", "path", rel, "err", err)
		return nil
	}
	if len(errsAfter) == 0 {
		return nil
	}
	errsBefore := 0
	if before != nil {
		b, err := t.syntax.Check(ctx, rel, before)
		if err != nil {
			t.log.Warn("syntax check unavailable", "path", rel, "err", err)
			return nil
		}
		errsBefore = len(b)
	}
	if errsBefore > 0 && len(errsAfter) <= errsBefore {
		return nil
	}
	shown := errsAfter
	if len(shown) > 10 {
		shown = append(shown[:10:10], "…")
	}
	return fail(OutcomeSyntaxReverted, "the edit would break the syntax of %s, so it was not applied:\n%s\nFix the edit and try again.",
		rel, strings.Join(shown, "\n"))
}
