package config

import (
	"reflect"
	"testing"
)

func TestParseEnvList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"", map[string]string{}, false},
		{"GOPROXY=http://10.0.0.1:3000/go,direct;npm_config_registry=http://10.0.0.1:4873/", map[string]string{"GOPROXY": "http://10.0.0.1:3000/go,direct", "npm_config_registry": "http://10.0.0.1:4873/"}, false},
		{" PIP_INDEX_URL=http://m/simple ; ", map[string]string{"PIP_INDEX_URL": "http://m/simple"}, false},
		{"EMPTY=", map[string]string{"EMPTY": ""}, false},
		{"novalue", nil, true},
		{"1BAD=x", nil, true},
		{"A=1;A=2", nil, true},
		{"GOFLAGS=-mod=mod -x", map[string]string{"GOFLAGS": "-mod=mod -x"}, false},
	}
	for _, tt := range tests {
		got, err := ParseEnvList(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("ParseEnvList(%q) = %v, %v", tt.in, got, err)
		}
	}
	if _, err := Load(LoadOptions{Environ: []string{"SELFCODE_WEBHOOK_SECRET=x", "SELFCODE_SANDBOX_ENV=oops"}}); err == nil {
		t.Error("Load accepted a malformed SELFCODE_SANDBOX_ENV")
	}
}
