package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// redactedMark replaces the value of a secret that is set.
const redactedMark = "[redacted]"

// Redacted returns every setting keyed by its YAML key, with each secret that
// is set replaced by "[redacted]" (an empty secret stays empty). Durations are
// rendered as strings like "45m0s".
func (c Config) Redacted() map[string]any {
	fs := fields()
	m := make(map[string]any, len(fs))
	for _, f := range fs {
		m[f.YAML] = c.shown(f)
	}
	return m
}

func (c Config) shown(f field) any {
	v := reflect.ValueOf(c).Field(f.index)
	if f.Secret {
		if v.IsZero() {
			return ""
		}
		return redactedMark
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String()
	}
	return v.Interface()
}

// String renders every setting, secrets redacted.
func (c Config) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.YAML)
		b.WriteByte('=')
		switch v := c.shown(f).(type) {
		case string:
			b.WriteString(strconv.Quote(v))
		default:
			fmt.Fprint(&b, v)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// GoString is used by %#v; secrets redacted.
func (c Config) GoString() string { return "config.Config" + c.String() }

// Format makes every fmt verb (%v, %+v, %s, %d, %x, ...) print the redacted
// form, so a formatted Config can never reveal a secret.
func (c Config) Format(s fmt.State, verb rune) {
	if verb == 'v' && s.Flag('#') {
		_, _ = io.WriteString(s, c.GoString())
		return
	}
	_, _ = io.WriteString(s, c.String())
}

// LogValue implements slog.LogValuer: a group of every setting, secrets
// redacted.
func (c Config) LogValue() slog.Value {
	fs := fields()
	attrs := make([]slog.Attr, len(fs))
	for i, f := range fs {
		attrs[i] = slog.Any(f.YAML, c.shown(f))
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON renders Redacted as a JSON object.
func (c Config) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(c.Redacted())
	if err != nil {
		return nil, fmt.Errorf("marshal config: %w", err)
	}
	return b, nil
}
