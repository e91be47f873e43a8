package github

import (
	"context"
	"encoding/json"
	"fmt"

	gh "github.com/google/go-github/v60/github"
)

// AppInfo is the app as GitHub has it registered (GET /app with the JWT):
// what `selfcode doctor` compares with app.yml.
type AppInfo struct {
	ID          int64
	Slug        string
	Name        string
	HTMLURL     string
	Owner       string // login of the account that owns the app
	OwnerType   string // "User" or "Organization"
	Permissions map[string]string
	Events      []string
}

// InstallationInfo is one installation of the app (GET /app/installations).
type InstallationInfo struct {
	ID          int64
	Account     string
	AccountType string
	HTMLURL     string // where an owner of the account reviews the installation
	Permissions map[string]string
	Events      []string
	Suspended   bool
}

// AppInfo reads the app with the JWT; it is the call that proves GitHub
// accepts the app id and private key.
func (f *Factory) AppInfo(ctx context.Context) (AppInfo, error) {
	if f.app == nil {
		return AppInfo{}, errNoCredentials
	}
	app, _, err := f.app.Apps.Get(ctx, "")
	if err != nil {
		return AppInfo{}, classify("get app", err)
	}
	perms, err := permissionMap(app.Permissions)
	if err != nil {
		return AppInfo{}, err
	}
	return AppInfo{ID: app.GetID(), Slug: app.GetSlug(), Name: app.GetName(), HTMLURL: app.GetHTMLURL(),
		Owner: app.GetOwner().GetLogin(), OwnerType: app.GetOwner().GetType(), Permissions: perms, Events: app.Events}, nil
}

// Installations lists every installation of the app (all pages).
func (f *Factory) Installations(ctx context.Context) ([]InstallationInfo, error) {
	if f.app == nil {
		return nil, errNoCredentials
	}
	var out []InstallationInfo
	opts := &gh.ListOptions{PerPage: 100}
	for page := 0; page < 100; page++ {
		insts, resp, err := f.app.Apps.ListInstallations(ctx, opts)
		if err != nil {
			return nil, classify("list the app's installations", err)
		}
		for _, in := range insts {
			perms, err := permissionMap(in.Permissions)
			if err != nil {
				return nil, err
			}
			out = append(out, InstallationInfo{ID: in.GetID(), Account: in.GetAccount().GetLogin(), AccountType: in.GetAccount().GetType(),
				HTMLURL: in.GetHTMLURL(), Permissions: perms, Events: in.Events, Suspended: in.SuspendedAt != nil})
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// WebhookURL is where GitHub delivers the app's webhooks (GET
// /app/hook/config), and whether a webhook secret is set there.
func (f *Factory) WebhookURL(ctx context.Context) (url string, secretSet bool, err error) {
	if f.app == nil {
		return "", false, errNoCredentials
	}
	cfg, _, err := f.app.Apps.GetHookConfig(ctx)
	if err != nil {
		return "", false, classify("get the app's webhook configuration", err)
	}
	return cfg.GetURL(), cfg.GetSecret() != "", nil
}

// permissionMap turns go-github's struct of permissions into name → level,
// the names as GitHub and app.yml spell them.
func permissionMap(p *gh.InstallationPermissions) (map[string]string, error) {
	m := map[string]string{}
	if p == nil {
		return m, nil
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("permissions: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("permissions: %w", err)
	}
	return m, nil
}
