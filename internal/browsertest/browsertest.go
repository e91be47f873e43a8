package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Required reports whether a missing browser fails the test instead of
// skipping it: under CI, or with SELFCODE_REQUIRE_BROWSER=1.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("SELFCODE_REQUIRE_BROWSER") == "1"
}

// ChromiumPath finds the browser, or skips (fails when Required) the test.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if Required() {
		t.Fatal("Chromium is required (CI or SELFCODE_REQUIRE_BROWSER=1) but not installed: run `make chromium`")
	}
	t.Skip("Chromium not installed (apt-get install chromium, or `make chromium`); skipping the browser test")
	return ""
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	Ctx context.Context
	t   testing.TB

	mu         sync.Mutex
	requests   []string
	exceptions []string
}

// New starts Chromium for t; it is stopped when t ends. Every host name
// other than 127.0.0.1 fails to resolve and other traffic is sent to a
// proxy address where nothing listens, so pages can reach loopback only.
func New(t testing.TB) *Browser {
	t.Helper()
	path := ChromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
		chromedp.Flag("proxy-server", "http://127.0.0.1:9"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("dns-prefetch-disable", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	b := &Browser{Ctx: ctx, t: t}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.mu.Lock()
			b.requests = append(b.requests, e.Request.URL)
			b.mu.Unlock()
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := fmt.Sprintf("%s at %s:%d:%d", d.Text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
			if d.Exception != nil {
				msg += ": " + d.Exception.Description
			}
			b.mu.Lock()
			b.exceptions = append(b.exceptions, msg)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// Do runs actions with a deadline and fails the test on error.
func (b *Browser) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](b *Browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// WaitJS waits (at most 15 s) until a JavaScript expression is truthy.
func (b *Browser) WaitJS(what, js string) {
	b.t.Helper()
	b.Do("wait for "+what, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second))(ctx, tg)
		return chromedp.Void{}, err
	})
}

// Screenshot writes a full-page PNG to dir/name, after checking it is a
// page-sized image, and returns its path.
func (b *Browser) Screenshot(dir, name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil || img.Bounds().Dx() < 800 || img.Bounds().Dy() < 300 {
		b.t.Fatalf("screenshot %s is not a page-sized PNG: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

// CheckOnly fails the test when a page requested a host outside hosts
// ("127.0.0.1:PORT"), requested nothing at all, or a script threw.
func (b *Browser) CheckOnly(hosts ...string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		b.t.Error("no request was recorded")
	}
	allowed := map[string]bool{}
	for _, h := range hosts {
		allowed[h] = true
	}
	for _, r := range b.requests {
		u, err := url.Parse(r)
		if err != nil || !allowed[u.Host] {
			b.t.Errorf("a page requested %s, outside %v", r, hosts)
		}
	}
	for _, e := range b.exceptions {
		b.t.Errorf("script error: %s", e)
	}
}
