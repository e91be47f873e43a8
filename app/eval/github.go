package eval

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	gh "github.com/selfcode/selfcode/app/github"
)

// RepoClients finds the App installation that reaches a repository
// (*github.Factory).
type RepoClients interface {
	RepoInstallation(ctx context.Context, owner, repo string) (*gh.Client, error)
}

// GitHubIssues is where the linked issues of the repository at dir are
// read: its GitHub remote on the host of the configured API (origin
// first), through the App's installation. Without one it returns nil and
// the reason, which the output repeats: each task is then its commit
// message only.
func GitHubIssues(ctx context.Context, dir, apiURL string, clients RepoClients) (IssueSource, string) {
	owner, name, err := gitHubRemote(ctx, dir, apiURL)
	if err != nil {
		return nil, err.Error()
	}
	if clients == nil {
		return nil, fmt.Sprintf("%s/%s is on GitHub, but no GitHub App credentials are configured (SELFCODE_APP_ID and its private key)", owner, name)
	}
	return repoIssues{clients: clients, owner: owner, name: name}, ""
}

type repoIssues struct {
	clients     RepoClients
	owner, name string
}

func (r repoIssues) Issue(ctx context.Context, number int) (Issue, error) {
	c, err := r.clients.RepoInstallation(ctx, r.owner, r.name)
	if err != nil {
		return Issue{}, err
	}
	is, err := c.Issue(ctx, r.owner, r.name, number)
	if err != nil {
		return Issue{}, err
	}
	return Issue{Number: is.Number, Title: is.Title, Body: is.Body, IsPullRequest: is.IsPullRequest}, nil
}

// gitHubRemote finds the owner and name of the repository's remote on the
// GitHub the API at apiURL serves: origin when it is there, else the first
// remote that is.
func gitHubRemote(ctx context.Context, dir, apiURL string) (string, string, error) {
	api, err := url.Parse(apiURL)
	if err != nil || api.Host == "" {
		return "", "", fmt.Errorf("the GitHub API URL %q is not a URL", apiURL)
	}
	out, err := gitLine(ctx, dir, "remote")
	if err != nil {
		return "", "", err
	}
	remotes := strings.Fields(out)
	for i, r := range remotes {
		if r == "origin" {
			remotes[0], remotes[i] = remotes[i], remotes[0]
		}
	}
	for _, r := range remotes {
		u, err := gitLine(ctx, dir, "remote", "get-url", "--", r)
		if err != nil {
			continue
		}
		host, owner, name, ok := parseRemote(u)
		if ok && sameGitHub(host, api) {
			return owner, name, nil
		}
	}
	return "", "", errors.New("no remote of the repository is on " + api.Host)
}

// parseRemote reads a git remote URL: https://host/owner/name(.git),
// ssh://git@host/owner/name.git or git@host:owner/name.git.
func parseRemote(raw string) (host, owner, name string, ok bool) {
	var path string
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		host, path = u.Host, u.Path
		if u.Scheme == "ssh" {
			host = u.Hostname()
		}
	} else if at, rest, found := strings.Cut(raw, "@"); found && !strings.Contains(at, "/") {
		h, p, found := strings.Cut(rest, ":")
		if !found {
			return "", "", "", false
		}
		host, path = h, p
	} else {
		return "", "", "", false
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(strings.TrimSuffix(path, "/"), ".git"), "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return "", "", "", false
	}
	return strings.ToLower(host), parts[len(parts)-2], parts[len(parts)-1], true
}

// sameGitHub reports whether a remote's host is the GitHub the API serves:
// api.github.com for github.com; the same host (and port, over HTTP) for
// GitHub Enterprise Server (https://HOST/api/v3/) or a local server.
func sameGitHub(host string, api *url.URL) bool {
	apiHost := strings.ToLower(api.Host)
	return host == apiHost || "api."+host == apiHost || host == strings.ToLower(api.Hostname())
}
