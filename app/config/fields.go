package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// FieldInfo describes one configuration setting, as declared by the tags on
// Config. It is what documentation tables are generated from.
type FieldInfo struct {
	Name    string // Go field name, e.g. "WebhookSecret"
	Env     string // environment variable, e.g. "SELFCODE_WEBHOOK_SECRET"
	YAML    string // key in the --config file, e.g. "webhook_secret"
	Default string // default value as written in the tag; empty when none
	Type    string // "string", "integer", "number", "boolean" or "duration"
	Secret  bool   // redacted whenever the configuration is rendered
	Desc    string // one-line description
}

// Fields lists every setting in declaration order.
func Fields() []FieldInfo {
	fs := fields()
	out := make([]FieldInfo, len(fs))
	for i, f := range fs {
		out[i] = f.FieldInfo
	}
	return out
}

// field is one row of the table derived from Config's struct tags.
type field struct {
	FieldInfo
	index  int      // index in Config
	checks []string // from the check tag
}

var durationType = reflect.TypeFor[time.Duration]()

// fields derives the table from Config's tags. It is cheap enough to
// recompute, which keeps the package free of global state.
func fields() []field {
	t := reflect.TypeFor[Config]()
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		env, ok := sf.Tag.Lookup("env")
		if !ok || !sf.IsExported() {
			continue
		}
		f := field{
			FieldInfo: FieldInfo{
				Name:    sf.Name,
				Env:     env,
				YAML:    sf.Tag.Get("yaml"),
				Default: sf.Tag.Get("default"),
				Type:    typeName(sf.Type),
				Secret:  sf.Tag.Get("secret") == "true",
				Desc:    sf.Tag.Get("desc"),
			},
			index: i,
		}
		if c := sf.Tag.Get("check"); c != "" {
			f.checks = strings.Split(c, ",")
		}
		out = append(out, f)
	}
	return out
}

func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	default:
		return "string"
	}
}

// set parses raw, checks it against the field's rules and stores it in c.
// The returned error never contains the value of a secret field.
func (f field) set(c *Config, raw string) error {
	v := reflect.ValueOf(c).Elem().Field(f.index)
	switch {
	case v.Type() == durationType:
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("not a duration (like 45m or 1h30m): %q", raw)
		}
		if err := checkNumber(f.checks, int64(d), d.String()); err != nil {
			return err
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("not an integer: %q", raw)
		}
		if err := checkNumber(f.checks, n, strconv.FormatInt(n, 10)); err != nil {
			return err
		}
		v.SetInt(n)
	case v.Kind() == reflect.Float64:
		n, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return fmt.Errorf("not a number: %q", raw)
		}
		if err := checkFloat(f.checks, n); err != nil {
			return err
		}
		v.SetFloat(n)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("not a boolean (true or false): %q", raw)
		}
		v.SetBool(b)
	default:
		if err := checkString(f.checks, raw); err != nil {
			if f.Secret {
				return fmt.Errorf("invalid value")
			}
			return err
		}
		v.SetString(raw)
	}
	return nil
}
