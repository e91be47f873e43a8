package samplerepo

import (
	"embed"
	"io/fs"
	"strings"
)

// Files hold the repository; a ".txt" suffix keeps Go tooling from treating
// them as part of this module (a go.mod cannot be embedded as is).
//
//go:embed files
var embedded embed.FS

// The buggy line and its fix, as they stand in greet.go.
const (
	BuggyLine = "\treturn \"Hello, \" + name + \".\""
	FixedLine = "\treturn \"Hello, \" + name + \"!\""
	// BuggyLineNumber is the line of BuggyLine in greet.go.
	BuggyLineNumber = 13
)

// Files returns path → content of every file of the repository.
func Files() map[string]string {
	out := map[string]string{}
	err := fs.WalkDir(embedded, "files", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := embedded.ReadFile(path)
		if err != nil {
			return err
		}
		out[strings.TrimSuffix(strings.TrimPrefix(path, "files/"), ".txt")] = string(b)
		return nil
	})
	if err != nil {
		panic("samplerepo: embedded files unreadable: " + err.Error()) // the embed is fixed at build time
	}
	return out
}
