package repoconfig

import _ "embed"

//go:embed selfcode.schema.json
var schema []byte

// Schema returns the JSON Schema (draft 2020-12) of .selfcode.yml. It
// describes exactly the keys Parse accepts; Parse is the authority on
// values (it also checks glob syntax and duplicate verify names).
func Schema() []byte {
	return append([]byte(nil), schema...)
}
