package samplerepo

import (
	"embed"
	"io/fs"
	"strings"
)

// Files hold the repositories; a ".txt" suffix keeps Go tooling from
// treating them as part of this module (a go.mod cannot be embedded as is).
//
//go:embed files all:service
var embedded embed.FS

// The buggy line and its fix, as they stand in greet.go.
const (
	BuggyLine = "\treturn \"Hello, \" + name + \".\""
	FixedLine = "\treturn \"Hello, \" + name + \"!\""
	// BuggyLineNumber is the line of BuggyLine in greet.go.
	BuggyLineNumber = 13
)

// Lines of the service repository (ServiceFiles) that its tests edit.
const (
	// ItemsLine is the list itemsd serves (items.go).
	ItemsLine = `var Items = []string{"apple", "banana"}`
	// AddrLine is where main.go picks the address it listens on.
	AddrLine = `	addr := ":" + envOr("PORT", "8080")`
)

// Files returns path → content of every file of the repository with the
// greeting bug.
func Files() map[string]string { return read("files") }

// ServiceFiles returns path → content of every file of the second sample
// repository: itemsd, a small Go HTTP service shipped as a container image
// (a Dockerfile built FROM the sandbox image, offline) whose .selfcode.yml
// has a smoke stage probing /health and /api/items. The Dockerfile builds
// from sandboxImage (the configured SELFCODE_SANDBOX_IMAGE), written as the
// default of its SANDBOX_IMAGE argument; "" keeps DefaultSandboxImage.
func ServiceFiles(sandboxImage string) map[string]string {
	files := read("service")
	if sandboxImage != "" {
		files["Dockerfile"] = strings.Replace(files["Dockerfile"], sandboxImageArg+DefaultSandboxImage+"\n", sandboxImageArg+sandboxImage+"\n", 1)
	}
	return files
}

// The line of the service's Dockerfile that names the image it builds from.
const (
	sandboxImageArg = "ARG SANDBOX_IMAGE="
	// DefaultSandboxImage is the image the Dockerfile builds from as
	// committed: selfcode's default sandbox image.
	DefaultSandboxImage = "selfcode-sandbox:latest"
)

func read(dir string) map[string]string {
	out := map[string]string{}
	err := fs.WalkDir(embedded, dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := embedded.ReadFile(path)
		if err != nil {
			return err
		}
		out[strings.TrimSuffix(strings.TrimPrefix(path, dir+"/"), ".txt")] = string(b)
		return nil
	})
	if err != nil {
		panic("samplerepo: embedded files unreadable: " + err.Error()) // the embed is fixed at build time
	}
	return out
}
