package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/selfcode/selfcode/pipeline/testreport"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Grade is a task's result judged by its held-back tests.
type Grade struct {
	// Resolved: at least one held-back test that failed on the base passes
	// on the result, and nothing that passed on the base (with the tests
	// applied) fails there.
	Resolved bool
	// Fixed are the held-back tests that failed on the base and pass on
	// the result.
	Fixed []string
	// Broken are the tests that passed on the base with the held-back
	// tests applied and do not pass on the result (failing, skipped, gone,
	// or not run), and commands naming no tests that passed there and fail.
	Broken []string
}

// grade judges result (the model's change with the held-back tests
// applied) against withTests (the base with them applied); base (the base
// as it is) tells the held-back tests apart from the tests that were
// there and failing already. Tests are compared one by one, within the
// command that ran them; of a test and its subtests only the subtests
// count.
func grade(base, withTests, result verify.Run) Grade {
	var g Grade
	for _, k := range commandKeys(withTests, result) {
		name := k.name
		a, b, r := command(base, k), command(withTests, k), command(result, k)
		for _, id := range leafTests(a, b, r) {
			bs, bKnown := status(b, id)
			rs, _ := status(r, id)
			as, aKnown := status(a, id)
			// A held-back test failing on the base: new there, or one
			// that ran and failed with them applied and did not fail
			// without them (a changed test). Old tests of a suite that
			// the held-back tests stopped building are neither.
			heldBack := bKnown && bs == testreport.Fail && (!aKnown || explicit(b, id) && as != testreport.Fail)
			switch {
			case heldBack && rs == testreport.Pass:
				g.Fixed = append(g.Fixed, label(name, id))
			case bKnown && bs == testreport.Pass && rs != testreport.Pass:
				g.Broken = append(g.Broken, label(name, id))
			}
		}
		if b != nil && b.Passed && !hasTests(b) && (r == nil || !r.Passed) {
			g.Broken = append(g.Broken, "command "+name)
		}
	}
	g.Resolved = len(g.Fixed) > 0 && len(g.Broken) == 0
	return g
}

// commandKey names a command across runs as verification matches them:
// by name, the nth of that name with the nth.
type commandKey struct {
	name string
	nth  int
}

// commandKeys are the commands of the runs, in order, once.
func commandKeys(runs ...verify.Run) []commandKey {
	var keys []commandKey
	for _, run := range runs {
		seen := map[string]int{}
		for _, c := range run.Commands {
			k := commandKey{c.Name, seen[c.Name]}
			seen[c.Name]++
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

func command(run verify.Run, k commandKey) *verify.CommandResult {
	n := 0
	for i := range run.Commands {
		if run.Commands[i].Name != k.name {
			continue
		}
		if n == k.nth {
			return &run.Commands[i]
		}
		n++
	}
	return nil
}

// leafTests are the tests any of the commands named, sorted, without the
// parents of subtests that are also named.
func leafTests(cmds ...*verify.CommandResult) []testreport.ID {
	var ids []testreport.ID
	for _, c := range cmds {
		if c == nil || c.Tests == nil {
			continue
		}
		for id := range c.Tests.Tests {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, testreport.Compare)
	ids = slices.Compact(ids)
	leaves := ids[:0:0]
	for i, id := range ids {
		if i+1 < len(ids) && id.IsAncestorOf(ids[i+1]) {
			continue // sorted: a parent's subtests follow it
		}
		leaves = append(leaves, id)
	}
	return leaves
}

// status is what the command says of a test: its own status; Fail when
// its suite does not build or failed, or the command did not finish; not
// known when the command does not name it.
func status(c *verify.CommandResult, id testreport.ID) (testreport.Status, bool) {
	if c == nil {
		return "", false
	}
	if c.Tests != nil {
		if st, ok := c.Tests.Tests[id]; ok {
			return st, true
		}
		if slices.Contains(c.Tests.Broken, id.Suite) || c.Tests.Suites[id.Suite] == testreport.Fail {
			return testreport.Fail, true
		}
	}
	if c.Skipped || c.Error != "" || c.Missing || c.TimedOut || c.OOMKilled || c.OutputStopped {
		return testreport.Fail, true
	}
	return "", false
}

// explicit reports whether the command named the test itself (it ran).
func explicit(c *verify.CommandResult, id testreport.ID) bool {
	if c == nil || c.Tests == nil {
		return false
	}
	_, ok := c.Tests.Tests[id]
	return ok
}

func hasTests(c *verify.CommandResult) bool { return c.Tests != nil && c.Tests.Len() > 0 }

// label names a test for a person: "TestX (pkg)", after its command's
// name when that is not the test command everyone expects.
func label(command string, id testreport.ID) string {
	if command == "" || strings.EqualFold(command, "test") {
		return id.String()
	}
	return fmt.Sprintf("%s: %s", command, id)
}
