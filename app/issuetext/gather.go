package issuetext

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/selfcode/selfcode/internal/utf8cut"
	"github.com/selfcode/selfcode/pipeline"
)

// Comment is one comment of an issue's thread as GitHub lists it.
type Comment struct {
	Author     string
	AuthorType string // "User", "Bot", …
	Body       string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Thread is an issue (or a pull request's conversation) as the job found
// it: the author and text (as the triggering delivery carried
// them) and its comments, oldest first.
type Thread struct {
	Author   string
	Title    string
	Body     string
	Comments []Comment
}

// Options says how to gather a thread.
type Options struct {
	// Cutoff is when the job was triggered: a comment created or edited
	// after it is left out (its text then is not what anyone asked for).
	Cutoff time.Time
	// Trigger is who triggered the job: the worker checked their write
	// access, so they need no lookup.
	Trigger string
	// CommandWord starts the comments that are commands, which are left
	// out (default "/selfcode").
	CommandWord string
	// WriteAccess reports whether user has write access (admin, maintain
	// or write) on the repository. An error counts as no.
	WriteAccess func(ctx context.Context, user string) (bool, error)
	// MaxLookups bounds the WriteAccess calls of one Gather (default 20);
	// authors past it are third parties, and the note says so.
	MaxLookups int
	// MaxBody bounds the text (default 16 KiB); MaxComments all
	// comments kept together (default 32 KiB); MaxComment each one
	// (default 8 KiB). Bytes, after Clean.
	MaxBody, MaxComments, MaxComment int
}

// Context is what the model gets of a thread.
type Context struct {
	Title, Body string // cleaned; Body bounded
	// AuthorStanding is the standing of the author.
	AuthorStanding pipeline.Standing
	// Comments kept, oldest first, cleaned and bounded, each with its
	// author's standing.
	Comments []pipeline.Comment
	// Note says what was left out and why ("" when nothing was).
	Note string
}

// Gather reduces a thread to what the model gets (see the package
// comment): commands, bots' comments and empty ones are dropped; comments
// created or edited after Options.Cutoff are left out; every text is
// cleaned (Clean); each author is looked up once (at most MaxLookups
// lookups) and marked a maintainer (write access) or a third party; the
// issue's text and the comments are bounded in size, maintainers'
// comments and then the newest kept first, and the note states what was
// left out.
func Gather(ctx context.Context, t Thread, o Options) Context {
	o.defaults()
	g := &gatherer{o: o, known: map[string]pipeline.Standing{}}
	if o.Trigger != "" {
		g.known[strings.ToLower(o.Trigger)] = pipeline.Maintainer
	}
	out := Context{Title: Clean(t.Title), AuthorStanding: g.standing(ctx, t.Author)}
	body := Clean(t.Body)
	if len(body) > o.MaxBody {
		g.note("the issue's text was cut to its first %d KiB (of %d KiB)", o.MaxBody>>10, (len(body)+1023)>>10)
		body = utf8cut.Cut(body, o.MaxBody) + "\n[… the rest of the issue's text was left out]"
	}
	out.Body = body

	type candidate struct {
		i int
		c pipeline.Comment
	}
	var cands []candidate
	late := 0
	for i, c := range t.Comments {
		text := strings.TrimSpace(c.Body)
		if text == "" || c.AuthorType == "Bot" || strings.HasSuffix(c.Author, "[bot]") || strings.HasPrefix(text, o.CommandWord) {
			continue
		}
		if !o.Cutoff.IsZero() && (c.CreatedAt.After(o.Cutoff) || c.UpdatedAt.After(o.Cutoff)) {
			late++
			continue
		}
		text = strings.TrimSpace(Clean(text))
		if len(text) > o.MaxComment {
			text = utf8cut.Cut(text, o.MaxComment) + "\n[… the rest of this comment was left out]"
		}
		cands = append(cands, candidate{i, pipeline.Comment{Author: c.Author, Body: text, Standing: g.standing(ctx, c.Author)}})
	}
	if late > 0 {
		g.note("%d comment(s) created or edited after the job was triggered were left out", late)
	}
	// Keep maintainers' comments first, then the newest, within the bound.
	order := make([]candidate, len(cands))
	copy(order, cands)
	sort.SliceStable(order, func(a, b int) bool {
		if ma, mb := order[a].c.Standing == pipeline.Maintainer, order[b].c.Standing == pipeline.Maintainer; ma != mb {
			return ma
		}
		return order[a].i > order[b].i
	})
	kept := map[int]bool{}
	used, dropped, droppedBytes := 0, 0, 0
	for _, cd := range order {
		if used+len(cd.c.Body) > o.MaxComments {
			dropped++
			droppedBytes += len(cd.c.Body)
			continue
		}
		used += len(cd.c.Body)
		kept[cd.i] = true
	}
	for _, cd := range cands {
		if kept[cd.i] {
			out.Comments = append(out.Comments, cd.c)
		}
	}
	if dropped > 0 {
		g.note("%d older or third-party comment(s) (%d KiB) were left out: the comments are capped at %d KiB", dropped, (droppedBytes+1023)>>10, o.MaxComments>>10)
	}
	if g.unchecked > 0 {
		g.note("the permission of %d commenter(s) was not looked up (at most %d per job): they count as third parties", g.unchecked, o.MaxLookups)
	}
	if len(g.notes) > 0 {
		out.Note = "Left out of this issue's context: " + strings.Join(g.notes, "; ") + "."
	}
	return out
}

func (o *Options) defaults() {
	if o.CommandWord == "" {
		o.CommandWord = "/selfcode"
	}
	if o.MaxLookups <= 0 {
		o.MaxLookups = 20
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 16 << 10
	}
	if o.MaxComments <= 0 {
		o.MaxComments = 32 << 10
	}
	if o.MaxComment <= 0 {
		o.MaxComment = 8 << 10
	}
}

// gatherer holds one Gather's lookups: each author is looked up once.
type gatherer struct {
	o         Options
	known     map[string]pipeline.Standing
	lookups   int
	unchecked int
	notes     []string
}

func (g *gatherer) note(format string, args ...any) {
	g.notes = append(g.notes, fmt.Sprintf(format, args...))
}

// standing is a user's standing, looked up at most once per Gather and
// at most MaxLookups times in all.
func (g *gatherer) standing(ctx context.Context, user string) pipeline.Standing {
	if user == "" {
		return pipeline.ThirdParty
	}
	key := strings.ToLower(user)
	if s, ok := g.known[key]; ok {
		return s
	}
	s := pipeline.ThirdParty
	switch {
	case g.o.WriteAccess == nil:
	case g.lookups >= g.o.MaxLookups:
		g.unchecked++
	default:
		g.lookups++
		if ok, err := g.o.WriteAccess(ctx, user); err == nil && ok {
			s = pipeline.Maintainer
		}
	}
	g.known[key] = s
	return s
}
