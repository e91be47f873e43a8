package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// ManifestOptions fills in the installation-specific parts of app.yml.
type ManifestOptions struct {
	// WebhookURL is where GitHub sends webhooks: the public listener's
	// /webhook, e.g. https://selfcode.example.com/webhook. Required.
	WebhookURL string
	// RedirectURL is where GitHub sends the browser back with the code.
	RedirectURL string
	// Name overrides app.yml's name (app names are unique on GitHub).
	Name string
}

// Manifest is a GitHub App manifest ready to post.
type Manifest struct {
	fields map[string]any
}

// BuildManifest reads app.yml (a GitHub App manifest written as YAML, as
// Probot's app.yml) and sets hook_attributes.url, redirect_url and
// optionally name. It checks what GitHub requires (url, hook_attributes.url)
// and that permissions are read, write or none.
func BuildManifest(appYML []byte, o ManifestOptions) (*Manifest, error) {
	var fields map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(appYML))
	if err := dec.Decode(&fields); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read app.yml: %w", err)
	}
	if fields == nil {
		return nil, errors.New("read app.yml: the file is empty")
	}
	if err := checkURL("--webhook-url", o.WebhookURL); err != nil {
		return nil, err
	}
	if err := checkURL("redirect URL", o.RedirectURL); err != nil {
		return nil, err
	}
	if u, _ := fields["url"].(string); u == "" {
		return nil, errors.New("app.yml: url (the app's homepage) is required")
	}
	hook := map[string]any{}
	if h, ok := fields["hook_attributes"]; ok {
		m, ok := h.(map[string]any)
		if !ok {
			return nil, errors.New("app.yml: hook_attributes must be a mapping")
		}
		hook = m
	}
	hook["url"] = o.WebhookURL
	if _, ok := hook["active"]; !ok {
		hook["active"] = true
	}
	fields["hook_attributes"] = hook
	fields["redirect_url"] = o.RedirectURL
	if o.Name != "" {
		fields["name"] = o.Name
	}
	if p, ok := fields["default_permissions"]; ok {
		perms, ok := p.(map[string]any)
		if !ok {
			return nil, errors.New("app.yml: default_permissions must be a mapping")
		}
		for k, v := range perms {
			if s, _ := v.(string); s != "read" && s != "write" && s != "none" {
				return nil, fmt.Errorf("app.yml: default_permissions.%s: %v is not read, write or none", k, v)
			}
		}
	}
	if e, ok := fields["default_events"]; ok {
		if _, ok := e.([]any); !ok {
			return nil, errors.New("app.yml: default_events must be a list")
		}
	}
	if _, err := json.Marshal(fields); err != nil {
		return nil, fmt.Errorf("app.yml: %w", err)
	}
	return &Manifest{fields: fields}, nil
}

func checkURL(what, s string) error {
	u, err := url.Parse(s)
	if s == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s must be an absolute http(s) URL, got %q", what, s)
	}
	return nil
}

// JSON is the manifest as GitHub's form field expects it.
func (m *Manifest) JSON() []byte {
	b, _ := json.Marshal(m.fields) // checked in BuildManifest
	return b
}

// Name is the app name the manifest proposes ("" when it has none).
func (m *Manifest) Name() string { s, _ := m.fields["name"].(string); return s }

// WebhookURL is hook_attributes.url.
func (m *Manifest) WebhookURL() string {
	h, _ := m.fields["hook_attributes"].(map[string]any)
	s, _ := h["url"].(string)
	return s
}

// Public reports whether anyone may install the app.
func (m *Manifest) Public() bool { b, _ := m.fields["public"].(bool); return b }

// Permissions lists "name: access" pairs, sorted.
func (m *Manifest) Permissions() []string {
	perms, _ := m.fields["default_permissions"].(map[string]any)
	out := make([]string, 0, len(perms))
	for k, v := range perms {
		out = append(out, fmt.Sprintf("%s: %v", k, v))
	}
	sort.Strings(out)
	return out
}

// Events lists the subscribed webhook events.
func (m *Manifest) Events() []string {
	ev, _ := m.fields["default_events"].([]any)
	out := make([]string, 0, len(ev))
	for _, e := range ev {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// GitHubWeb is GitHub's web address for the flow: https://github.com, or
// https://HOST for GitHub Enterprise Server. A bare host name gets https.
func GitHubWeb(host string) (*url.URL, error) {
	h := strings.TrimSpace(host)
	if h == "" {
		h = "github.com"
	}
	if !strings.Contains(h, "://") {
		h = "https://" + h
	}
	u, err := url.Parse(h)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("--github-host must be a host name such as github.com or ghe.example.com, got %q", host)
	}
	u.Path = ""
	return u, nil
}

// FormAction is where the browser posts the manifest: /settings/apps/new
// for a personal account, /organizations/ORG/settings/apps/new for an
// organisation, with state as a query parameter GitHub echoes back.
func FormAction(web *url.URL, org, state string) string {
	u := *web
	if org != "" {
		u.Path = "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	} else {
		u.Path = "/settings/apps/new"
	}
	u.RawQuery = url.Values{"state": {state}}.Encode()
	return u.String()
}

// APIURL is the REST base URL that goes with a GitHub web address:
// api.github.com for github.com, HOST/api/v3/ for GitHub Enterprise Server.
func APIURL(web *url.URL) string {
	if strings.EqualFold(web.Host, "github.com") {
		return "https://api.github.com/"
	}
	return web.Scheme + "://" + web.Host + "/api/v3/"
}

// Needs is what app.yml asks GitHub for: the permissions (name →
// read/write) and webhook events the App must have.
type Needs struct {
	Permissions map[string]string `yaml:"default_permissions"`
	Events      []string          `yaml:"default_events"`
}

// ReadNeeds reads app.yml's default_permissions and default_events.
func ReadNeeds(appYML []byte) (Needs, error) {
	var n Needs
	if err := yaml.Unmarshal(appYML, &n); err != nil {
		return Needs{}, fmt.Errorf("read app.yml: %w", err)
	}
	if len(n.Permissions) == 0 {
		return Needs{}, errors.New("app.yml: no default_permissions")
	}
	return n, nil
}
