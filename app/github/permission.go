package github

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Permission is a user's effective role on a repository.
type Permission string

// Permission levels, strongest first.
const (
	PermissionAdmin    Permission = "admin"
	PermissionMaintain Permission = "maintain"
	PermissionWrite    Permission = "write"
	PermissionTriage   Permission = "triage"
	PermissionRead     Permission = "read"
	PermissionNone     Permission = "none"
)

// Allowed reports whether the permission may trigger selfcode (admin, maintain, write).
func (p Permission) Allowed() bool {
	return p == PermissionAdmin || p == PermissionMaintain || p == PermissionWrite
}

// FromLevel maps the API's answer to a Permission: role_name when it is a standard
// role (it tells maintain from write and triage from read), otherwise the legacy
// permission (custom roles report their base role there).
func FromLevel(l PermissionLevel) Permission {
	switch p := Permission(strings.ToLower(l.RoleName)); p {
	case PermissionAdmin, PermissionMaintain, PermissionWrite, PermissionTriage, PermissionRead, PermissionNone:
		return p
	}
	switch p := Permission(strings.ToLower(l.Permission)); p {
	case PermissionAdmin, PermissionWrite, PermissionRead:
		return p
	}
	return PermissionNone
}

// InstallationClients yields installation clients; *Factory implements it.
type InstallationClients interface {
	Installation(ctx context.Context, id int64) (*Client, error)
}

// PermissionCheckerOptions configures a PermissionChecker.
type PermissionCheckerOptions struct {
	Clients InstallationClients
	// TTL of a cached answer; default 60 s. Keep it short: revoked access should
	// stop working quickly.
	TTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// PermissionChecker answers "may this user trigger selfcode on this repository?",
// caching answers per (installation, repository, user) for a short TTL.
type PermissionChecker struct {
	opts  PermissionCheckerOptions
	mu    sync.Mutex
	cache map[permKey]permEntry
}

type permKey struct {
	installation int64
	repo, user   string
}

type permEntry struct {
	perm    Permission
	expires time.Time
}

// NewPermissionChecker builds a checker.
func NewPermissionChecker(opts PermissionCheckerOptions) *PermissionChecker {
	if opts.TTL <= 0 {
		opts.TTL = 60 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &PermissionChecker{opts: opts, cache: map[permKey]permEntry{}}
}

// maxCachedPermissions bounds the cache; expired entries are swept past this size.
const maxCachedPermissions = 10000

// Check returns the user's permission. A user GitHub does not know (404) has
// PermissionNone; other failures are returned (and not cached).
func (c *PermissionChecker) Check(ctx context.Context, installationID int64, owner, repo, user string) (Permission, error) {
	key := permKey{installationID, strings.ToLower(owner + "/" + repo), strings.ToLower(user)}
	now := c.opts.Now()
	c.mu.Lock()
	if e, ok := c.cache[key]; ok && now.Before(e.expires) {
		c.mu.Unlock()
		return e.perm, nil
	}
	c.mu.Unlock()

	client, err := c.opts.Clients.Installation(ctx, installationID)
	if err != nil {
		return PermissionNone, fmt.Errorf("check permission of %s on %s/%s: %w", user, owner, repo, err)
	}
	perm := PermissionNone
	level, err := client.CollaboratorPermission(ctx, owner, repo, user)
	switch {
	case err == nil:
		perm = FromLevel(level)
	case IsNotFound(err):
	default:
		return PermissionNone, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache) >= maxCachedPermissions {
		for k, e := range c.cache {
			if !now.Before(e.expires) {
				delete(c.cache, k)
			}
		}
		if len(c.cache) >= maxCachedPermissions {
			clear(c.cache)
		}
	}
	c.cache[key] = permEntry{perm: perm, expires: now.Add(c.opts.TTL)}
	return perm, nil
}
