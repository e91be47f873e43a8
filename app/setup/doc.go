// Package setup registers selfcode as a GitHub App through GitHub's App
// Manifest flow: a local page posts app.yml as a manifest, the redirect's code
// is exchanged for the new app's credentials, and those are written to a
// 0600 config file that `selfcode serve --config` reads.
package setup
