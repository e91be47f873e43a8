package image

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

// BaseImages returns the images a Dockerfile builds from, in order and
// without repeats: each FROM that is not an earlier stage (or scratch), and
// each COPY --from that names an image rather than a stage, with the ARGs
// before the first FROM expanded (args override their defaults, as docker
// build's --build-arg does).
func BaseImages(dockerfile []byte, args map[string]string) ([]string, error) {
	res, err := parser.Parse(bytes.NewReader(dockerfile))
	if err != nil {
		return nil, fmt.Errorf("parse the Dockerfile: %w", err)
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
	stage := 0
	for _, n := range res.AST.Children {
		switch strings.ToLower(n.Value) {
		case "arg":
			if seenFrom {
				continue // a stage's ARG does not reach FROM lines
			}
			for a := n.Next; a != nil; a = a.Next {
				name, def, hasDef := strings.Cut(a.Value, "=")
				if v, ok := args[name]; ok {
					meta[name] = v
					continue
				}
				if !hasDef {
					continue
				}
				v, _, err := lex.ProcessWord(def, meta)
				if err != nil {
					return nil, fmt.Errorf("line %d: ARG %s: %w", n.StartLine, name, err)
				}
				meta[name] = v
			}
		case "from":
			seenFrom = true
			if n.Next == nil {
				return nil, fmt.Errorf("line %d: FROM without an image", n.StartLine)
			}
			ref, _, err := lex.ProcessWord(n.Next.Value, meta)
			if err != nil {
				return nil, fmt.Errorf("line %d: FROM %s: %w", n.StartLine, n.Next.Value, err)
			}
			add(ref)
			if as := n.Next.Next; as != nil && strings.EqualFold(as.Value, "as") && as.Next != nil {
				stages[strings.ToLower(as.Next.Value)] = true
			}
			stages[strconv.Itoa(stage)] = true
			stage++
		case "copy":
			for _, f := range n.Flags {
				if from, ok := strings.CutPrefix(f, "--from="); ok {
					add(from)
				}
			}
		}
	}
	if !seenFrom {
		return nil, errors.New("the Dockerfile has no FROM")
	}
	return images, nil
}

// envMap is the ARG values seen so far, as the shell lexer reads them.
type envMap map[string]string

func (e envMap) Get(k string) (string, bool) { v, ok := e[k]; return v, ok }
func (e envMap) Keys() []string              { return slices.Sorted(maps.Keys(e)) }
