package configdoc

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/config"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md")

var docPath = filepath.Join("..", "..", "docs", "configuration.md")

// TestConfigurationDoc fails when docs/configuration.md is not what the
// Config struct renders to; -update rewrites it.
func TestConfigurationDoc(t *testing.T) {
	want := Render(config.Fields())
	if *update {
		if err := os.WriteFile(docPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("%v (run: go generate ./internal/configdoc)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/configuration.md is out of date with app/config; run: go generate ./internal/configdoc")
	}
}

func TestRenderCoversEveryField(t *testing.T) {
	fields := config.Fields()
	doc := string(Render(fields))
	for _, f := range fields {
		row := "| `" + f.Env + "` | `" + f.YAML + "` | " + f.Type + " |"
		if !strings.Contains(doc, row) {
			t.Errorf("no row for %s", f.Env)
		}
		if f.Secret && !strings.Contains(doc, f.Desc+" *(secret)*") {
			t.Errorf("%s is not marked secret", f.Env)
		}
	}
	// A drifted table is caught: a field the doc does not know changes it.
	extra := append(fields, config.FieldInfo{Env: "SELFCODE_NEW", YAML: "new", Type: "string", Desc: "a | b"})
	if bytes.Equal(Render(extra), Render(fields)) {
		t.Fatal("a new field does not change the rendering")
	}
	if !strings.Contains(string(Render(extra)), `a \| b`) {
		t.Error("a | in a description breaks the table")
	}
}
