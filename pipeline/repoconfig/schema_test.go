package repoconfig

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// schemaKeys walks the schema's properties, following $ref and oneOf, and
// returns every key path ("limits.max_files", "verify[].run").
func schemaKeys(t *testing.T) []string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(Schema(), &root); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", root["$schema"])
	}
	defs, _ := root["$defs"].(map[string]any)
	var deref func(n map[string]any) map[string]any
	deref = func(n map[string]any) map[string]any {
		if ref, ok := n["$ref"].(string); ok {
			d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
			if !ok {
				t.Fatalf("dangling $ref %s", ref)
			}
			return deref(d)
		}
		return n
	}
	var keys []string
	var walk func(prefix string, n map[string]any)
	walk = func(prefix string, n map[string]any) {
		n = deref(n)
		if alts, ok := n["oneOf"].([]any); ok {
			for _, a := range alts {
				walk(prefix, a.(map[string]any))
			}
		}
		if props, ok := n["properties"].(map[string]any); ok {
			if n["additionalProperties"] != false {
				t.Errorf("%q: object without additionalProperties: false", prefix)
			}
			for k, v := range props {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				keys = append(keys, p)
				walk(p, v.(map[string]any))
			}
		}
		if items, ok := n["items"].(map[string]any); ok {
			walk(prefix+"[]", items)
		}
	}
	walk("", root)
	sort.Strings(keys)
	return keys
}

// structKeys lists the yaml keys of Config, the names the parser fills in.
func structKeys() []string {
	var keys []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == "-" || tag == "" {
				continue
			}
			p := tag
			if prefix != "" {
				p = prefix + "." + tag
			}
			keys = append(keys, p)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(p, ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(p+"[]", ft.Elem())
			}
		}
	}
	walk("", reflect.TypeOf(Config{}))
	sort.Strings(keys)
	return keys
}

// samples sets each key to a valid non-default value; the parser must
// accept it and the value must land in the Config.
var samples = map[string]string{
	"image":                          "image: alpine:3",
	"setup":                          "setup: [make deps]",
	"setup_network":                  "setup_network: false",
	"verify":                         "verify: [{run: make check}]",
	"verify[].name":                  "verify: [{name: check, run: make check}]",
	"verify[].run":                   "verify: [{run: ./check.sh}]",
	"verify[].timeout":               "verify: [{run: make check, timeout: 3m}]",
	"paths":                          "paths: {deny: [secret/**]}",
	"paths.allow":                    "paths: {allow: [src/**]}",
	"paths.deny":                     "paths: {deny: [vendor/**]}",
	"paths.protected":                "paths: {protected: [go.mod]}",
	"paths.github_opt_in":            "paths: {github_opt_in: [.github/CODEOWNERS]}",
	"limits":                         "limits: {max_files: 2}",
	"limits.max_files":               "limits: {max_files: 2}",
	"limits.max_fix_attempts":        "limits: {max_fix_attempts: 1}",
	"limits.ci_fix_attempts":         "limits: {ci_fix_attempts: 1}",
	"limits.max_steps":               "limits: {max_steps: 7}",
	"limits.max_tokens":              "limits: {max_tokens: 1000}",
	"limits.job_timeout":             "limits: {job_timeout: 1h}",
	"limits.command_timeout":         "limits: {command_timeout: 90s}",
	"limits.blast_radius":            "limits: {blast_radius: 9}",
	"limits.output_bytes":            "limits: {output_bytes: 65536}",
	"reports":                        "reports: [\"**/junit*.xml\"]",
	"enabled":                        "enabled: false",
	"draft_on_failure":               "draft_on_failure: false",
	"instructions":                   "instructions: use tabs",
	"smoke":                          "smoke: {port: 8080}",
	"smoke.dockerfile":               "smoke: {port: 8080, dockerfile: deploy/Dockerfile}",
	"smoke.port":                     "smoke: {port: 9000}",
	"smoke.env":                      "smoke: {port: 8080, env: {APP_ENV: smoke}}",
	"smoke.health":                   "smoke: {port: 8080, health: {path: /healthz}}",
	"smoke.health.path":              "smoke: {port: 8080, health: {path: /healthz}}",
	"smoke.health.status":            "smoke: {port: 8080, health: {status: 204}}",
	"smoke.health.timeout":           "smoke: {port: 8080, health: {timeout: 10s}}",
	"smoke.requests":                 "smoke: {port: 8080, requests: [{path: /api}]}",
	"smoke.requests[].method":        "smoke: {port: 8080, requests: [{method: post, path: /api}]}",
	"smoke.requests[].path":          "smoke: {port: 8080, requests: [{path: /api/items}]}",
	"smoke.requests[].status":        "smoke: {port: 8080, requests: [{path: /api, status: 404}]}",
	"smoke.requests[].body_contains": "smoke: {port: 8080, requests: [{path: /api, body_contains: items}]}",
	"smoke.read_only":                "smoke: {port: 8080, read_only: false}",
	"smoke.timeout":                  "smoke: {port: 8080, timeout: 2m}",
}

func TestSchemaMatchesParser(t *testing.T) {
	fromSchema := schemaKeys(t)
	fromStruct := structKeys()
	var fromSamples []string
	for k := range samples {
		fromSamples = append(fromSamples, k)
	}
	sort.Strings(fromSamples)
	if !reflect.DeepEqual(fromSchema, fromStruct) {
		t.Errorf("schema keys %v\n!= parser keys %v", fromSchema, fromStruct)
	}
	if !reflect.DeepEqual(fromSchema, fromSamples) {
		t.Errorf("schema keys %v\n!= sampled keys %v", fromSchema, fromSamples)
	}
	for _, key := range fromSchema {
		y, ok := samples[key]
		if !ok {
			continue
		}
		c, err := Parse([]byte(y))
		if err != nil {
			t.Errorf("%s: parser rejects schema key: %v", key, err)
			continue
		}
		if reflect.DeepEqual(c, Default()) {
			t.Errorf("%s: %q parsed but left the defaults unchanged", key, y)
		}
	}
	// Every section rejects a key the schema does not name.
	for _, y := range []string{"bogus: 1", "paths: {bogus: []}", "limits: {bogus: 1}", "verify: [{run: x, bogus: 1}]",
		"smoke: {port: 1, bogus: 1}", "smoke: {port: 1, health: {bogus: 1}}", "smoke: {port: 1, requests: [{path: /, bogus: 1}]}"} {
		var ve *ValidationError
		if _, err := Parse([]byte(y)); err == nil || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("%q: err = %v, want unknown key", y, err)
		} else if !errors.As(err, &ve) {
			t.Errorf("%q: %T is not a ValidationError", y, err)
		}
	}
}
