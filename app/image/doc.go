// Package image puts the sandbox image on the Docker engine whichever way
// works there: pulled when its reference names a registry, built with docker
// build from deploy/sandbox/Dockerfile when the engine can pull the
// Dockerfile's base images, and built offline (build-offline.sh: debootstrap
// → docker import) only when it cannot. Ensure builds it when it is
// missing; EnsureCurrent also when it was built from another recipe.
package image
