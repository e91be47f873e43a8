// Package deploy holds selfcode's deployment files (Dockerfile, Docker
// Compose and Kubernetes manifests, the sandbox image's recipes and the
// release script) and embeds the sandbox image's recipes for the binary; its
// tests check that the files parse and keep the promises the operations
// guide makes about them.
package deploy
