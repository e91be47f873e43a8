package setup

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/internal/browsertest"
	"github.com/selfcode/selfcode/internal/fakegithub"
)

// TestSetupInBrowser clicks through the manifest flow in headless Chromium:
// the setup page's form goes to the fake GitHub, whose redirect brings the
// browser back to the callback, and the credentials are written. It proves
// the page works in a browser (form, Content Security Policy, redirects).
// Screenshots go to testdata/screenshots (git-ignored).
func TestSetupInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	gh, err := fakegithub.New(fakegithub.Options{AppID: 2024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gh.Close() }) // after the browser has gone (cleanups run last-in first-out)
	br := browsertest.New(t)
	fac, err := github.New(github.Options{BaseURL: gh.URL()})
	if err != nil {
		t.Fatal(err)
	}
	f, file := newFlow(t, fac, Options{GitHubHost: gh.URL(), Org: "acme", Write: WriteOptions{APIURL: gh.URL()}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() { r, err := f.Run(ctx); done <- ran{r, err} }()

	shots := filepath.Join("testdata", "screenshots")
	br.Do("open the setup page", chromedp.Navigate(f.URL()), chromedp.WaitVisible(chromedp.CSS(`#register button`)))
	if got := browsertest.Eval[string](br, `document.querySelector('dd code').textContent`); got != "https://bot.example.com/webhook" {
		t.Errorf("page shows webhook URL %q", got)
	}
	br.Screenshot(shots, "01-setup-page.png")
	br.Do("register", chromedp.Click(chromedp.CSS(`#register button`)))
	br.Do("wait for the done page", chromedp.WaitVisible(chromedp.ID("done")))
	if got := browsertest.Eval[string](br, `location.href`); got != f.URL()+"callback?"+mustQuery(t, got) {
		t.Errorf("the browser ended on %s, want the callback", got)
	}
	if got := browsertest.Eval[string](br, `document.querySelector('a').href`); got != gh.URL()+"apps/selfcode/installations/new" {
		t.Errorf("install link %q", got)
	}
	br.Screenshot(shots, "02-setup-done.png")

	r := <-done
	if r.err != nil || r.res.AppID != 2024 || r.res.Owner != "acme" {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	cfg, err := config.Load(config.LoadOptions{File: file})
	if err != nil || cfg.AppID != 2024 || cfg.WebhookSecret == "" {
		t.Fatalf("credentials: %v %+v", err, cfg)
	}
	page, _ := url.Parse(f.URL())
	fake, _ := url.Parse(gh.URL())
	br.CheckOnly(page.Host, fake.Host)
}

func mustQuery(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.RawQuery
}
