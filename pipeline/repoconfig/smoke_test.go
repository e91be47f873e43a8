package repoconfig

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

const smokeExample = `smoke:
  dockerfile: Dockerfile          # default; context is the repository root
  port: 8080                      # the port the service listens on inside the container
  env: {APP_ENV: smoke, WORKERS: 2, EMPTY: }
  health: {path: /health, status: 200, timeout: 60s}
  requests:
    - {method: GET, path: /api/items, status: 200, body_contains: "items"}
    - {method: post, path: "/api/items?dry=1", status: 201}
    - {path: /api/items}
  timeout: 5m                     # the whole stage
`

func TestParseSmoke(t *testing.T) {
	c, err := Parse([]byte(smokeExample))
	if err != nil {
		t.Fatal(err)
	}
	want := &Smoke{
		Dockerfile: "Dockerfile",
		Port:       8080,
		Env:        map[string]string{"APP_ENV": "smoke", "WORKERS": "2", "EMPTY": ""},
		Health:     SmokeHealth{Path: "/health", Status: 200, Timeout: time.Minute},
		Requests: []SmokeRequest{
			{Method: "GET", Path: "/api/items", Status: 200, BodyContains: "items"},
			{Method: "POST", Path: "/api/items?dry=1", Status: 201},
			{Method: "GET", Path: "/api/items", Status: 200},
		},
		ReadOnly: true,
		Timeout:  5 * time.Minute,
	}
	if !reflect.DeepEqual(c.Smoke, want) {
		t.Fatalf("smoke =\n%+v\nwant\n%+v", c.Smoke, want)
	}
	var names []string
	for i := range c.Smoke.Requests {
		names = append(names, c.Smoke.RequestStep(i))
	}
	if got := strings.Join(names, "|"); got != "smoke: GET /api/items|smoke: POST /api/items?dry=1|smoke: GET /api/items (2)" {
		t.Errorf("step names %s", got)
	}

	// Only the port is needed; everything else has a default.
	c, err = Parse([]byte("smoke:\n  port: 3000\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultSmoke()
	def.Port = 3000
	if !reflect.DeepEqual(c.Smoke, def) {
		t.Errorf("defaults: %+v", c.Smoke)
	}
	// No smoke key, or a null one: no smoke stage.
	for _, y := range []string{"", "smoke:\n"} {
		if c, err := Parse([]byte(y)); err != nil || c.Smoke != nil {
			t.Errorf("%q: smoke %+v err %v", y, c.Smoke, err)
		}
	}
}

func TestHashSmoke(t *testing.T) {
	parse := func(y string) string {
		t.Helper()
		c, err := Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return c.Hash()
	}
	none := parse("")
	base := parse("smoke: {port: 8080, env: {A: '1', B: '2'}}")
	if base == none {
		t.Fatal("a smoke stage does not change the hash")
	}
	if parse("smoke: {port: 8080, env: {B: '2', A: '1'}}") != base {
		t.Error("the order of env keys changes the hash")
	}
	for _, y := range []string{
		"smoke: {port: 8081, env: {A: '1', B: '2'}}",
		"smoke: {port: 8080, env: {A: '1', B: '3'}}",
		"smoke: {port: 8080, env: {A: '1', B: '2'}, dockerfile: other/Dockerfile}",
		"smoke: {port: 8080, env: {A: '1', B: '2'}, health: {path: /h}}",
		"smoke: {port: 8080, env: {A: '1', B: '2'}, requests: [{path: /x}]}",
		"smoke: {port: 8080, env: {A: '1', B: '2'}, requests: [{path: /x, body_contains: y}]}",
		"smoke: {port: 8080, env: {A: '1', B: '2'}, read_only: false}",
		"smoke: {port: 8080, env: {A: '1', B: '2'}, timeout: 3m}",
	} {
		if parse(y) == base {
			t.Errorf("%s: same hash as without the change", y)
		}
	}
}

// schemaValidator compiles the committed JSON Schema and returns a
// function validating a YAML document with it.
func schemaValidator(t *testing.T) func(y string) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("selfcode.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := comp.Compile("selfcode.schema.json")
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return func(y string) error {
		var v any
		if err := yaml.Unmarshal([]byte(y), &v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return sch.Validate(inst)
	}
}

// TestSchemaValidatesSmoke: the committed JSON Schema is a valid draft
// 2020-12 schema that accepts the documented example and rejects what the
// parser rejects.
func TestSchemaValidatesSmoke(t *testing.T) {
	validate := schemaValidator(t)
	for _, y := range []string{smokeExample, "smoke: {port: 1}", "smoke:\n"} {
		if err := validate(y); err != nil {
			t.Errorf("schema rejects %q: %v", y, err)
		}
		if _, err := Parse([]byte(y)); err != nil {
			t.Errorf("parser rejects %q: %v", y, err)
		}
	}
	for _, y := range []string{
		"smoke: {dockerfile: Dockerfile}",
		"smoke: {port: 70000}",
		"smoke: {port: 80, dockerfile: ../x}",
		"smoke: {port: 80, requests: [{method: GET}]}",
		"smoke: {port: 80, requests: [{path: 'http://x/'}]}",
		"smoke: {port: 80, requests: [{path: '//x/'}]}",
		"smoke: {port: 80, health: {status: 600}}",
		"smoke: {port: 80, env: {1X: y}}",
		"smoke: {port: 80, bogus: 1}",
	} {
		if err := validate(y); err == nil {
			t.Errorf("schema accepts %q", y)
		}
		if _, err := Parse([]byte(y)); err == nil {
			t.Errorf("parser accepts %q", y)
		}
	}
}
