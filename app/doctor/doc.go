// Package doctor checks, one line each with a fix for each failure, what
// selfcode needs on this machine: the Docker engine and the isolation it
// gives, the sandbox image and its toolchains, the data directory, the
// webhook secret, the GitHub App, the model endpoint and the public URL.
package doctor
