package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	units "github.com/docker/go-units"
	"github.com/gin-gonic/gin"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/sandbox"
)

// CacheAdmin lists the repositories' sandbox caches and clears them with
// their verified baselines (server.Caches does).
type CacheAdmin interface {
	Caches(ctx context.Context) ([]sandbox.CacheInfo, error)
	ClearCaches(ctx context.Context, repository string) (removed, inUse int, err error)
}

// cacheRoutes adds the caches' page and API when o.Caches is set:
//
//	GET  /caches            the dashboard's cache page
//	POST /caches/clear      form field repo (empty: all), then back to /caches
//	GET  /api/caches        {"caches": [...]}, least recently used first
//	POST /api/caches/clear  body {"repo": "owner/name"} (or {} for all) → {"removed": n, "in_use": n}
func (d *dashboard) cacheRoutes(r *gin.Engine) {
	if d.o.Caches == nil {
		r.GET("/caches", func(c *gin.Context) {
			d.render(c, http.StatusNotFound, "error.html", "No sandbox engine: there are no caches to show.")
		})
		return
	}
	r.GET("/caches", d.caches)
	r.POST("/caches/clear", func(c *gin.Context) {
		repo := strings.TrimSpace(c.PostForm("repo"))
		removed, inUse, err := d.clearCaches(c.Request.Context(), repo)
		if err != nil {
			d.fail(c, err)
			return
		}
		c.Redirect(http.StatusSeeOther, fmt.Sprintf("/caches?removed=%d&in_use=%d", removed, inUse))
	})
	r.GET("/api/caches", func(c *gin.Context) {
		caches, err := d.o.Caches.Caches(c.Request.Context())
		if err != nil {
			apiError(c, errs.E(errs.KindUnavailable, "list caches", err))
			return
		}
		if caches == nil {
			caches = []sandbox.CacheInfo{}
		}
		c.JSON(http.StatusOK, gin.H{"caches": caches})
	})
	r.POST("/api/caches/clear", func(c *gin.Context) {
		var body struct {
			Repo string `json:"repo"`
		}
		if c.Request.ContentLength != 0 {
			if err := c.ShouldBindJSON(&body); err != nil {
				apiError(c, errs.E(errs.KindInvalid, "body must be {\"repo\": \"owner/name\"} or {}", err))
				return
			}
		}
		removed, inUse, err := d.clearCaches(c.Request.Context(), strings.TrimSpace(body.Repo))
		if err != nil {
			apiError(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"removed": removed, "in_use": inUse})
	})
}

// clearCaches clears one repository's caches (repo "owner/name") or all.
func (d *dashboard) clearCaches(ctx context.Context, repo string) (int, int, error) {
	removed, inUse, err := d.o.Caches.ClearCaches(ctx, repo)
	switch {
	case errors.Is(err, sandbox.ErrInvalid):
		return 0, 0, errs.E(errs.KindInvalid, "clear caches", err)
	case err != nil:
		return 0, 0, errs.E(errs.KindUnavailable, "clear caches", err)
	}
	d.o.Logger.Info("caches cleared from the dashboard", "repo", repo, "removed", removed, "in_use", inUse)
	return removed, inUse, nil
}

// cachesView is the cache page.
type cachesView struct {
	Caches         []sandbox.CacheInfo
	Total          int64
	Removed, InUse string // after a clear
}

func (d *dashboard) caches(c *gin.Context) {
	caches, err := d.o.Caches.Caches(c.Request.Context())
	if err != nil {
		d.fail(c, errs.E(errs.KindUnavailable, "list caches", err))
		return
	}
	v := cachesView{Caches: caches, Removed: c.Query("removed"), InUse: c.Query("in_use")}
	for _, ci := range caches {
		v.Total += max(ci.Size, 0)
	}
	d.render(c, http.StatusOK, "caches.html", v)
}

// formatBytes writes n as a size people read: 1.5GiB; "unknown" below 0.
func formatBytes(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return units.BytesSize(float64(n))
}

// shortImage is an image id as docker prints it: 12 hex digits.
func shortImage(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
