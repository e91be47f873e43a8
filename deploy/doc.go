// Package deploy holds selfcode's deployment files (Dockerfile, Docker
// Compose and Kubernetes manifests); its tests check that they parse and keep
// the promises the operations guide makes about them.
package deploy
