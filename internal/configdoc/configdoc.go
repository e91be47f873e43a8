package configdoc

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/selfcode/selfcode/app/config"
)

// Render returns the Markdown configuration reference for fields.
func Render(fields []config.FieldInfo) []byte {
	var b bytes.Buffer
	b.WriteString(`# Configuration reference

<!-- Generated from the Config struct in app/config by internal/configdoc.
     Do not edit: run ` + "`go generate ./internal/configdoc`" + ` after changing app/config. -->

selfcode's server reads its settings from three places, each overriding the
one before:

1. the defaults below;
2. a YAML file given with ` + "`--config FILE`" + `, whose keys are the **YAML key**
   column (lower case, without the ` + "`SELFCODE_`" + ` prefix);
3. the environment (**variable** column). An empty variable counts as unset.

Every value is checked when the server starts; a bad one stops it with the
variable or the file, line and key that is wrong. ` + "`selfcode config validate --server FILE`" + `
checks a file without starting anything. Values marked *secret* are never
logged, shown or written anywhere by selfcode; ` + "`SELFCODE_LLM_API_KEY`" + ` falls back
to ` + "`OPENAI_API_KEY`" + `.

The credentials file ` + "`selfcode setup`" + ` writes is such a YAML file (` + "`app_id`" + `,
` + "`private_key`" + `, ` + "`webhook_secret`" + ` and, for GitHub Enterprise Server,
` + "`github_api_url`" + `).

| variable | YAML key | type | default | description |
|---|---|---|---|---|
`)
	for _, f := range fields {
		def := "—"
		if f.Default != "" {
			def = "`" + f.Default + "`"
		}
		desc := escape(f.Desc)
		if f.Secret {
			desc += " *(secret)*"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", f.Env, f.YAML, f.Type, def, desc)
	}
	b.WriteString(`
Types: *duration* is a Go duration (` + "`90s`, `45m`, `1h30m`" + `); *number* is a decimal number that may have a fraction (` + "`2.5`" + `); *boolean* is
` + "`true`" + ` or ` + "`false`" + `; *integer* is a decimal number.

The repository side (` + "`.selfcode.yml`" + `) is described by its JSON Schema,
[pipeline/repoconfig/selfcode.schema.json](../pipeline/repoconfig/selfcode.schema.json)
(also printed by ` + "`selfcode config schema`" + `; point your editor's YAML
language server at it), and checked with ` + "`selfcode config validate`" + `.
`)
	return b.Bytes()
}

// escape keeps a description inside its table cell.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
