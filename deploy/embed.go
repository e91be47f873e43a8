package deploy

import (
	"embed"
	"io/fs"
)

//go:embed sandbox/Dockerfile sandbox/warm.sh sandbox/build-offline.sh
var sandboxFiles embed.FS

// SandboxContext is the sandbox image's recipe as the binary carries it, so
// a release binary builds the image without the repository: the Dockerfile
// (the registry path), build-offline.sh (the offline path) and warm.sh,
// which both use.
func SandboxContext() fs.FS {
	sub, err := fs.Sub(sandboxFiles, "sandbox")
	if err != nil {
		panic(err) // the embedded directory exists by construction
	}
	return sub
}
