package doctor

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	gh "github.com/selfcode/selfcode/app/github"
)

const fixRegister = "register the App with `selfcode setup --webhook-url https://HOST/webhook` and run serve with --config selfcode-app.yml (or set SELFCODE_APP_ID and SELFCODE_PRIVATE_KEY_PATH)"

func (d *Doctor) checkAppKey(context.Context) Result {
	cfg := d.cfg
	switch {
	case cfg.AppID == 0 && cfg.PrivateKey == "" && cfg.PrivateKeyPath == "":
		return fail("no GitHub App is configured: jobs are stored but never run", fixRegister)
	case cfg.AppID == 0:
		return fail("SELFCODE_APP_ID is not set", "set SELFCODE_APP_ID to the App's id (its settings page, About)")
	case cfg.PrivateKey == "" && cfg.PrivateKeyPath == "":
		return fail("no private key: SELFCODE_PRIVATE_KEY and SELFCODE_PRIVATE_KEY_PATH are empty", fixKey)
	}
	key, err := cfg.PrivateKeyPEM()
	if err != nil {
		return fail(err.Error(), fixKey)
	}
	bits, err := rsaBits(key)
	if err != nil {
		return fail("the private key does not parse: "+err.Error(), fixKey)
	}
	if _, err := d.github(); err != nil {
		return fail(err.Error(), fixKey)
	}
	return ok("RSA %d-bit key for App %d", bits, cfg.AppID)
}

const fixKey = "generate a private key on the App's settings page (Private keys) and point SELFCODE_PRIVATE_KEY_PATH at the downloaded .pem file"

// rsaBits parses a GitHub App key (PKCS#1 or PKCS#8 RSA PEM).
func rsaBits(pemText []byte) (int, error) {
	block, _ := pem.Decode(pemText)
	if block == nil {
		return 0, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k.N.BitLen(), nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return 0, errors.New("neither a PKCS#1 nor a PKCS#8 private key")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return 0, fmt.Errorf("a %T, not an RSA key", k)
	}
	return rk.N.BitLen(), nil
}

// github is the client factory the GitHub checks share.
func (d *Doctor) github() (*gh.Factory, error) {
	return d.factory.get(func() (*gh.Factory, error) {
		key, err := d.cfg.PrivateKeyPEM()
		if err != nil {
			return nil, err
		}
		o := gh.Options{AppID: d.cfg.AppID, PrivateKeyPEM: key, BaseURL: d.cfg.GitHubAPIURL, Logger: d.o.Logger,
			HTTPTimeout: 15 * time.Second, CallTimeout: time.Minute, MaxAttempts: 2}
		if d.o.GitHub != nil {
			d.o.GitHub(&o)
		}
		return gh.New(o)
	})
}

// appInfo reads the App with its JWT once.
func (d *Doctor) appInfo(ctx context.Context) (gh.AppInfo, error) {
	return d.app.get(func() (gh.AppInfo, error) {
		f, err := d.github()
		if err != nil {
			return gh.AppInfo{}, err
		}
		return f.AppInfo(ctx)
	})
}

func (d *Doctor) checkApp(ctx context.Context) Result {
	if d.checkAppKey(ctx).Status != OK {
		return skip(CheckAppKey)
	}
	app, err := d.appInfo(ctx)
	switch {
	case errors.Is(err, gh.ErrUnauthorized):
		return fail("GitHub refused the App's JWT: "+err.Error(),
			fmt.Sprintf("the key must be one of App %d's private keys (generate one on its settings page), and this machine's clock must be right: the JWT is valid for minutes (check NTP)", d.cfg.AppID))
	case errors.Is(err, gh.ErrNotFound):
		return fail(fmt.Sprintf("no App %d at %s: %v", d.cfg.AppID, d.cfg.GitHubAPIURL, err),
			"check SELFCODE_APP_ID and SELFCODE_GITHUB_API_URL (GitHub Enterprise Server: https://HOST/api/v3/)")
	case err != nil:
		return fail(err.Error(), fmt.Sprintf("check SELFCODE_GITHUB_API_URL (%s) and that this machine reaches it (a proxy goes in HTTPS_PROXY)", d.cfg.GitHubAPIURL))
	}
	owner := ""
	if app.Owner != "" {
		owner = ", owned by " + app.Owner
	}
	return ok("the JWT is accepted: App %s (id %d%s) %s", app.Slug, app.ID, owner, app.HTMLURL)
}

// installations lists the App's installations once.
func (d *Doctor) installations(ctx context.Context) ([]gh.InstallationInfo, error) {
	return d.installs.get(func() ([]gh.InstallationInfo, error) {
		f, err := d.github()
		if err != nil {
			return nil, err
		}
		return f.Installations(ctx)
	})
}

func (d *Doctor) checkInstallations(ctx context.Context) Result {
	app, err := d.appInfo(ctx)
	if err != nil {
		return skip(CheckApp)
	}
	insts, err := d.installations(ctx)
	if err != nil {
		return fail("GitHub accepted the App's JWT but did not list its installations: "+err.Error(),
			fmt.Sprintf("run `selfcode doctor` again in a while (GitHub may be failing: its status page says), and check that nothing between this machine and SELFCODE_GITHUB_API_URL (%s), a proxy in HTTPS_PROXY for one, refuses GET /app/installations", d.cfg.GitHubAPIURL))
	}
	if len(insts) == 0 {
		return fail("the App is installed nowhere: no repository can ask it for anything",
			"install it on the accounts whose repositories it should work on: "+strings.TrimSuffix(app.HTMLURL, "/")+"/installations/new")
	}
	var names, suspended []string
	for _, in := range insts {
		n := fmt.Sprintf("%s (%d)", in.Account, in.ID)
		names = append(names, n)
		if in.Suspended {
			suspended = append(suspended, n)
		}
	}
	detail := fmt.Sprintf("%d: %s", len(insts), strings.Join(names, ", "))
	if len(suspended) > 0 {
		return warn(detail+"; suspended: "+strings.Join(suspended, ", "), "an owner of the account unsuspends the installation in its settings (Applications)")
	}
	return ok("%s", detail)
}

func (d *Doctor) checkPermissions(ctx context.Context) Result {
	needs, err := d.needs()
	if err != nil {
		return fail(err.Error(), "pass the App manifest with --manifest (app.yml at the root of the selfcode repository)")
	}
	app, err := d.appInfo(ctx)
	if err != nil {
		return skip(CheckApp)
	}
	if lacks := missing(needs.Permissions, needs.Events, app.Permissions, app.Events); len(lacks) > 0 {
		return fail("the App lacks what app.yml asks for: "+strings.Join(lacks, ", "),
			"grant it on "+appSettings(app)+" (Permissions & events); each installation's owner then accepts the change")
	}
	insts, err := d.installations(ctx)
	if err != nil {
		return skip(CheckInstallations)
	}
	var pending []string
	fix := ""
	for _, in := range insts {
		if lacks := missing(needs.Permissions, nil, in.Permissions, nil); len(lacks) > 0 {
			pending = append(pending, fmt.Sprintf("the installation on %s has not accepted %s", in.Account, strings.Join(lacks, ", ")))
			if fix == "" {
				fix = "an owner of " + in.Account + " reviews and accepts the new permissions at " + in.HTMLURL + " (GitHub asks them by e-mail)"
			}
		}
	}
	if len(pending) > 0 {
		return fail(strings.Join(pending, "; "), fix)
	}
	return ok("the App and its %d installation(s) have app.yml's %d permissions and %d events", len(insts), len(needs.Permissions), len(needs.Events))
}

// missing lists what want asks for that have lacks: a permission below
// the level asked for, and events not subscribed.
func missing(wantPerms map[string]string, wantEvents []string, havePerms map[string]string, haveEvents []string) []string {
	rank := map[string]int{"": 0, "none": 0, "read": 1, "write": 2, "admin": 3}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(wantPerms)) {
		if rank[havePerms[name]] < rank[wantPerms[name]] {
			have := havePerms[name]
			if have == "" {
				have = "none"
			}
			out = append(out, fmt.Sprintf("%s: %s (has %s)", name, wantPerms[name], have))
		}
	}
	for _, e := range wantEvents {
		if !slices.Contains(haveEvents, e) {
			out = append(out, "event "+e)
		}
	}
	return out
}

// appSettings is the App's settings page, where permissions are changed.
func appSettings(app gh.AppInfo) string {
	u, err := url.Parse(app.HTMLURL)
	if err != nil || u.Host == "" {
		return "the App's settings page"
	}
	u.RawQuery = ""
	if app.OwnerType == "Organization" {
		u.Path = "/organizations/" + app.Owner + "/settings/apps/" + app.Slug + "/permissions"
	} else {
		u.Path = "/settings/apps/" + app.Slug + "/permissions"
	}
	return u.String()
}
