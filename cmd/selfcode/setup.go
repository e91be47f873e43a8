package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode"
	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/setup"
)

func setupCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "setup",
		Short: "Register selfcode as a GitHub App (manifest flow from app.yml) and save its credentials",
		Long: `setup serves a page on http://127.0.0.1:PORT/ that posts app.yml to GitHub as a
GitHub App manifest. After you confirm on GitHub, GitHub redirects back, setup
exchanges the code for the new app's id, private key and webhook secret, and
writes them to --out (mode 0600) as a config file for ` + "`selfcode serve --config`" + `.

The GitHub API used for the exchange is SELFCODE_GITHUB_API_URL; with a
--github-host other than github.com it defaults to https://HOST/api/v3/.`,
		Args: cobra.NoArgs,
		RunE: runSetup,
	}
	f := c.Flags()
	f.String("webhook-url", "", "public URL of the server's /webhook (required), e.g. https://selfcode.example.com/webhook")
	f.String("org", "", "register the app for this organisation (default: your personal account)")
	f.String("github-host", "github.com", "GitHub host; a GitHub Enterprise Server host name for GHES")
	f.String("name", "", "app name (default: app.yml's name; app names are unique on GitHub)")
	f.String("manifest", "", "the app manifest (Probot's app.yml form); default ./app.yml when there is one, else the copy built into selfcode")
	f.Int("port", 3000, "local port of the setup page (on 127.0.0.1)")
	f.String("out", "selfcode-app.yml", "credentials file to write (YAML config; mode 0600)")
	f.Bool("force", false, "replace --out if it exists")
	f.Duration("timeout", time.Hour, "give up after this long (GitHub's codes expire after an hour)")
	return c
}

func runSetup(cmd *cobra.Command, _ []string) error {
	fl := cmd.Flags()
	get := func(name string) string { v, _ := fl.GetString(name); return v }
	port, _ := fl.GetInt("port")
	force, _ := fl.GetBool("force")
	timeout, _ := fl.GetDuration("timeout")
	if get("webhook-url") == "" {
		return &exitError{code: 2, err: errors.New("--webhook-url is required: the public URL GitHub delivers webhooks to (<your server>/webhook)")}
	}
	if port < 0 || port > 65535 {
		return &exitError{code: 2, err: fmt.Errorf("--port %d is not a port", port)}
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	appYML, err := readManifest(get("manifest"))
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	web, err := setup.GitHubWeb(get("github-host"))
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	apiURL := cfg.GitHubAPIURL
	if apiURL == config.Default().GitHubAPIURL {
		apiURL = setup.APIURL(web)
	}
	gh, err := github.New(github.Options{BaseURL: apiURL, MaxAttempts: 1})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("listen on 127.0.0.1:%d (choose another --port): %w", port, err)}
	}
	flow, err := setup.New(setup.Options{
		AppYML: appYML, WebhookURL: get("webhook-url"), GitHubHost: get("github-host"), Org: get("org"), Name: get("name"),
		Listener: ln, Exchanger: gh, Logger: newLogger(cfg),
		Write: setup.WriteOptions{File: get("out"), Force: force, APIURL: apiURL},
	})
	if err != nil {
		ln.Close()
		return &exitError{code: 2, err: err}
	}
	out := cmd.OutOrStdout()
	account := "your personal account"
	if o := get("org"); o != "" {
		account = "the organisation " + o
	}
	fmt.Fprintf(out, "Open %s in your browser to register a GitHub App for %s on %s.\n", flow.URL(), account, web.Host)
	fmt.Fprintf(out, "Webhooks will go to %s. Waiting for GitHub (up to %s)…\n", flow.Manifest().WebhookURL(), timeout)

	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := flow.Run(ctx)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintf(out, "Registered GitHub App %q (id %d, slug %s) owned by %s.\n", res.Name, res.AppID, res.Slug, res.Owner)
	fmt.Fprintf(out, "Wrote app_id, private_key and webhook_secret to %s (mode 0600).\n", res.File)
	fmt.Fprintf(out, "Next: install the app on your repositories: %s\n", res.InstallURL())
	fmt.Fprintf(out, "Then start the server: selfcode serve --config %s\n", res.File)
	return nil
}

// readManifest reads the App manifest: path, or ./app.yml when path is
// empty and there is one (a checkout), or the copy the binary carries.
func readManifest(path string) ([]byte, error) {
	if path == "" {
		data, err := os.ReadFile("app.yml")
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read ./app.yml: %w", err)
		}
		return selfcode.AppManifest(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the manifest (--manifest): %w", err)
	}
	return data, nil
}
