package dockerfile

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// ErrInvalid is wrapped by every error about the Dockerfile itself.
var ErrInvalid = errors.New("not a valid Dockerfile")

// BaseImages returns the images a Dockerfile builds from, in order and
// without repeats: each FROM that is not an earlier stage (or scratch), and
// each COPY or ADD --from that names an image rather than a stage (by name
// or number). The ARGs before the first FROM are expanded; args override
// their defaults, as docker build's --build-arg does, and an ARG with
// neither is empty. A FROM that names no image once expanded is an error.
func BaseImages(dockerfile []byte, args map[string]string) ([]string, error) {
	res, err := parser.Parse(bytes.NewReader(dockerfile))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	lex := shell.NewLex(res.EscapeToken)
	meta := envMap{}
	stages := map[string]bool{}
	var images []string
	add := func(ref string) {
		if ref != "" && !strings.EqualFold(ref, "scratch") && !stages[strings.ToLower(ref)] && !slices.Contains(images, ref) {
			images = append(images, ref)
		}
	}
	seenFrom := false
	for _, n := range res.AST.Children {
		switch strings.ToLower(n.Value) {
		case "arg":
			if seenFrom {
				continue // a stage's ARG does not reach FROM lines
			}
			for a := n.Next; a != nil; a = a.Next {
				name, def, hasDef := strings.Cut(a.Value, "=")
				switch v, given := args[name]; {
				case given:
					meta[name] = v
				case hasDef:
					v, _, err := lex.ProcessWord(def, meta)
					if err != nil {
						return nil, fmt.Errorf("%w: line %d: ARG %s: %w", ErrInvalid, n.StartLine, name, err)
					}
					meta[name] = v
				default:
					if _, ok := meta[name]; !ok {
						meta[name] = ""
					}
				}
			}
		case "from":
			if n.Next == nil {
				return nil, fmt.Errorf("%w: line %d: FROM names no image", ErrInvalid, n.StartLine)
			}
			ref, _, err := lex.ProcessWord(n.Next.Value, meta)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: FROM %s: %w", ErrInvalid, n.StartLine, n.Next.Value, err)
			}
			if ref == "" {
				return nil, fmt.Errorf("%w: line %d: FROM %s names no image once its build arguments are expanded", ErrInvalid, n.StartLine, n.Next.Value)
			}
			add(ref)
			if as := n.Next.Next; as != nil && strings.EqualFold(as.Value, "as") && as.Next != nil {
				stages[strings.ToLower(as.Next.Value)] = true
			}
			seenFrom = true
		case "copy", "add":
			for _, f := range n.Flags {
				from, ok := strings.CutPrefix(f, "--from=")
				if !ok {
					continue
				}
				if _, err := strconv.Atoi(from); err == nil {
					continue // a stage by its number
				}
				ref, _, err := lex.ProcessWord(from, meta)
				if err != nil {
					return nil, fmt.Errorf("%w: line %d: %s: %w", ErrInvalid, n.StartLine, f, err)
				}
				add(ref)
			}
		}
	}
	if !seenFrom {
		return nil, fmt.Errorf("%w: no FROM line", ErrInvalid)
	}
	return images, nil
}

// envMap is the ARG values seen so far, as the shell lexer reads them.
type envMap map[string]string

func (e envMap) Get(k string) (string, bool) { v, ok := e[k]; return v, ok }
func (e envMap) Keys() []string              { return slices.Sorted(maps.Keys(e)) }
