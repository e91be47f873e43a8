package github

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/selfcode/selfcode/internal/fakegithub"
)

// What doctor compares with app.yml: the App's permissions and events, and
// each installation's, read with the JWT; its webhook URL too.
func TestAppInfoInstallationsAndWebhookURL(t *testing.T) {
	perms := map[string]string{"contents": "write", "metadata": "read"}
	e := setup(t, fakegithub.Options{AppSlug: "selfcode-x", Permissions: perms, Events: []string{"issues"}, WebhookURL: "https://bot.example.com/webhook"}, nil)
	e.fake.AddInstallation(77, "org-b")
	e.fake.SetInstallationPermissions(77, map[string]string{"metadata": "read"})

	app, err := e.factory.AppInfo(ctxT(t))
	if err != nil || app.Slug != "selfcode-x" || app.Owner != "selfcode-owner" || !maps.Equal(app.Permissions, perms) || !slices.Equal(app.Events, []string{"issues"}) {
		t.Fatalf("AppInfo = %+v, %v", app, err)
	}
	insts, err := e.factory.Installations(ctxT(t))
	if err != nil || len(insts) != 2 {
		t.Fatalf("Installations = %+v, %v", insts, err)
	}
	byAccount := map[string]InstallationInfo{}
	for _, in := range insts {
		byAccount[in.Account] = in
	}
	if in := byAccount["octo"]; in.ID != instID || !maps.Equal(in.Permissions, perms) || in.HTMLURL == "" {
		t.Errorf("octo's installation %+v", in)
	}
	if in := byAccount["org-b"]; in.ID != 77 || !maps.Equal(in.Permissions, map[string]string{"metadata": "read"}) {
		t.Errorf("org-b's installation %+v", in)
	}
	url, secret, err := e.factory.WebhookURL(ctxT(t))
	if err != nil || url != "https://bot.example.com/webhook" || !secret {
		t.Fatalf("WebhookURL = %q, %v, %v", url, secret, err)
	}
}

func TestAppInfoWithoutCredentials(t *testing.T) {
	f, err := New(Options{BaseURL: "http://127.0.0.1:1/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppInfo(ctxT(t)); !errors.Is(err, errNoCredentials) {
		t.Errorf("AppInfo: %v", err)
	}
	if _, err := f.Installations(ctxT(t)); !errors.Is(err, errNoCredentials) {
		t.Errorf("Installations: %v", err)
	}
	if _, _, err := f.WebhookURL(ctxT(t)); !errors.Is(err, errNoCredentials) {
		t.Errorf("WebhookURL: %v", err)
	}
}
