package pricing

import (
	"math"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/pipeline/chat"
)

func TestCost(t *testing.T) {
	t.Parallel()
	tab := New(map[string]Price{"local": {Input: 1, CachedInput: 0.5, Output: 2}, "gpt-4o": {Input: 3, CachedInput: 1, Output: 12}})
	tests := []struct {
		name   string
		u      chat.Usage
		models []string
		want   float64
		ok     bool
	}{
		{"by kind", chat.Usage{Prompt: 1_000_000, CachedPrompt: 400_000, Completion: 500_000, Total: 1_500_000}, []string{"local"},
			0.6*1 + 0.4*0.5 + 0.5*2, true},
		{"a default", chat.Usage{Prompt: 2_000_000, Completion: 1_000_000, Total: 3_000_000}, []string{"gpt-4.1"}, 2*2 + 8, true},
		{"override wins over the default", chat.Usage{Prompt: 1_000_000, Total: 1_000_000}, []string{"gpt-4o"}, 3, true},
		{"dated snapshot costs its model's price", chat.Usage{Completion: 1_000_000, Total: 1_000_000}, []string{"gpt-4o-mini-2024-07-18"}, 0.60, true},
		{"old-style snapshot", chat.Usage{Completion: 1_000_000, Total: 1_000_000}, []string{"gpt-4o-0613"}, 12, true},
		{"asked-for name first, then the one that answered", chat.Usage{Prompt: 1_000_000, Total: 1_000_000}, []string{"my-alias", "local"}, 1, true},
		{"unknown model is unknown, not zero", chat.Usage{Prompt: 10, Total: 10}, []string{"llama-3-70b"}, 0, false},
		{"a variant is not its family", chat.Usage{Prompt: 10, Total: 10}, []string{"gpt-4o-audio-preview"}, 0, false},
		{"no model named", chat.Usage{Prompt: 10, Total: 10}, nil, 0, false},
		{"only a total: unknown", chat.Usage{Total: 100}, []string{"local"}, 0, false},
		{"a name only another table has", chat.Usage{Prompt: 10, Total: 10}, []string{"free"}, 0, false},
		{"no tokens cost nothing", chat.Usage{}, []string{"local"}, 0, true},
	}
	for _, tt := range tests {
		got, ok := tab.Cost(tt.u, tt.models...)
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: Cost = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	free := New(map[string]Price{"free": {}})
	if got, ok := free.Cost(chat.Usage{Prompt: 10, Total: 10}, "free"); !ok || got != 0 {
		t.Errorf("a model priced at zero: %v, %v", got, ok)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := Parse(" gpt-4.1=2,0.5,8 ; ; my-model = 0.1, 0.01 ,0.4;free=0,0,0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Price{"gpt-4.1": {2, 0.5, 8}, "my-model": {0.1, 0.01, 0.4}, "free": {}}
	if len(got) != len(want) {
		t.Fatalf("Parse = %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %+v, want %+v", k, got[k], v)
		}
	}
	if m, err := Parse(""); err != nil || len(m) != 0 {
		t.Errorf("empty list: %v %v", m, err)
	}
	for _, bad := range []struct{ in, want string }{
		{"gpt-4.1=2,8", "MODEL=INPUT,CACHED_INPUT,OUTPUT"},
		{"gpt-4.1", "MODEL=INPUT,CACHED_INPUT,OUTPUT"},
		{"=1,2,3", "MODEL=INPUT,CACHED_INPUT,OUTPUT"},
		{"a b=1,2,3", "MODEL=INPUT,CACHED_INPUT,OUTPUT"},
		{"m=1,x,3", `"x" is not a price`},
		{"m=1,-2,3", `"-2" is not a price`},
		{"m=1,NaN,3", `"NaN" is not a price`},
		{"m=1,Inf,3", `"Inf" is not a price`},
		{"m=1,2,3;m=1,2,3", "set twice"},
	} {
		if _, err := Parse(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", bad.in, err, bad.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"gpt-4.1=2,0.5,8", "a=1,2,3;b=0,0,0", "x=", ";;", "m=1e308,1e308,1e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil {
			return
		}
		tab := New(m)
		for name, p := range m {
			if p.Input < 0 || p.CachedInput < 0 || p.Output < 0 {
				t.Fatalf("negative price for %q: %+v", name, p)
			}
			if c, ok := tab.Cost(chat.Usage{Prompt: 100, CachedPrompt: 50, Completion: 10, Total: 110}, name); !ok || c < 0 || math.IsNaN(c) {
				t.Fatalf("cost of %q = %v, %v", name, c, ok)
			}
		}
	})
}
