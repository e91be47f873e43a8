// Package selfcode holds what the binary embeds from the repository's root:
// the GitHub App manifest, app.yml, so that a release binary (`selfcode
// doctor`, `selfcode setup`) knows the permissions and events the App needs
// without a checkout.
package selfcode

import (
	"bytes"
	_ "embed"
)

//go:embed app.yml
var appYML []byte

// AppManifest returns app.yml.
func AppManifest() []byte { return bytes.Clone(appYML) }
