package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/backup"
	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
)

// JobReader is the read side of the job store the admin API needs.
type JobReader interface {
	Get(ctx context.Context, id string) (*job.Job, error)
	List(ctx context.Context, o store.ListOptions) ([]*job.Job, string, error)
	Artifacts(ctx context.Context, id string) (map[string]int, error)
	Artifact(ctx context.Context, id, name string) ([]byte, error)
}

// Canceler cancels jobs, interrupting running ones.
type Canceler interface {
	Cancel(ctx context.Context, id, reason string) (*job.Job, error)
}

// Snapshotter gives the backup endpoint the store's bbolt handle, whose read
// transactions are consistent snapshots.
type Snapshotter interface {
	DB() *bolt.DB
}

// AdminOptions configures the admin listener.
type AdminOptions struct {
	Jobs     JobReader
	Canceler Canceler
	Metrics  http.Handler
	Logger   *slog.Logger
	// Backup serves GET /api/backup; when nil, Jobs is used if it is a
	// Snapshotter (the store is), else the endpoint is absent.
	Backup Snapshotter
	// LivePoll is how often a job page's live log looks at the job; default 500ms.
	LivePoll time.Duration
	// Reports serves GET /api/reports and /api/reports/{id} (morning
	// reports); Switch serves GET and POST /api/enabled (the kill switch).
	// Either may be nil: its endpoints are then absent (admin_overnight.go).
	Reports ReportReader
	Switch  KillSwitch
	// Caches lists and clears the sandbox caches (the dashboard's cache
	// page and /api/caches); nil: no sandbox engine, and the page says so.
	Caches CacheAdmin
}

// NewAdmin builds the admin engine: /metrics, /api/jobs…, and the dashboard.
func NewAdmin(o AdminOptions) (*gin.Engine, error) {
	if o.Jobs == nil || o.Canceler == nil {
		return nil, errs.E(errs.KindInvalid, "admin API needs a job reader and a canceler", nil)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Backup == nil {
		o.Backup, _ = o.Jobs.(Snapshotter)
	}
	dash, err := newDashboard(o)
	if err != nil {
		return nil, err
	}
	a := &admin{o: o}
	r := gin.New()
	r.Use(gin.Recovery(), sameOrigin())
	if o.Metrics != nil {
		r.GET("/metrics", gin.WrapH(o.Metrics))
	}
	r.GET("/api/jobs", a.list)
	r.GET("/api/jobs/:id", a.get)
	r.GET("/api/jobs/:id/artifacts/:name", a.artifact)
	r.POST("/api/jobs/:id/cancel", a.cancel)
	if o.Backup != nil {
		r.GET("/api/backup", a.backup)
	}
	overnightRoutes(r, o)
	if err := dash.routes(r); err != nil {
		return nil, err
	}
	return r, nil
}

type admin struct{ o AdminOptions }

func apiError(c *gin.Context, err error) {
	c.AbortWithStatusJSON(errs.HTTPStatus(err), gin.H{"error": err.Error()})
}

func (a *admin) list(c *gin.Context) {
	o := store.ListOptions{Cursor: c.Query("cursor"), State: job.State(c.Query("state"))}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			apiError(c, errs.E(errs.KindInvalid, "limit must be a positive integer", nil))
			return
		}
		o.Limit = n
	}
	if o.State != "" && !o.State.Valid() {
		apiError(c, errs.E(errs.KindInvalid, "unknown state "+string(o.State), nil))
		return
	}
	if o.Cursor != "" && job.ParseID(o.Cursor) != nil {
		apiError(c, errs.E(errs.KindInvalid, "invalid cursor", nil))
		return
	}
	jobs, next, err := a.o.Jobs.List(c.Request.Context(), o)
	if err != nil {
		apiError(c, err)
		return
	}
	if jobs == nil {
		jobs = []*job.Job{}
	}
	c.JSON(http.StatusOK, gin.H{"jobs": jobs, "next": next})
}

// jobDetail is a job plus the names and sizes of its artifacts.
type jobDetail struct {
	*job.Job
	Artifacts map[string]int `json:"artifacts"`
}

func (a *admin) get(c *gin.Context) {
	ctx := c.Request.Context()
	j, err := a.o.Jobs.Get(ctx, c.Param("id"))
	if err != nil {
		apiError(c, err)
		return
	}
	arts, err := a.o.Jobs.Artifacts(ctx, j.ID)
	if err != nil {
		apiError(c, err)
		return
	}
	c.JSON(http.StatusOK, jobDetail{Job: j, Artifacts: arts})
}

func (a *admin) artifact(c *gin.Context) {
	data, err := a.o.Jobs.Artifact(c.Request.Context(), c.Param("id"), c.Param("name"))
	if err != nil {
		apiError(c, err)
		return
	}
	c.Data(http.StatusOK, "text/plain; charset=utf-8", data)
}

func (a *admin) cancel(c *gin.Context) {
	j, err := a.o.Canceler.Cancel(c.Request.Context(), c.Param("id"), "canceled through the admin API")
	if err != nil {
		apiError(c, err)
		return
	}
	a.o.Logger.Info("job cancel requested through the admin API", "job_id", j.ID, "state", j.State)
	c.JSON(http.StatusOK, j)
}

// backup streams a consistent copy of the store (one bbolt read transaction)
// while the server keeps writing; `selfcode backup FILE` saves it.
func (a *admin) backup(c *gin.Context) {
	c.Header("Content-Type", "application/octet-stream")
	c.Header("Content-Disposition", `attachment; filename="selfcode.db"`)
	c.Header("Cache-Control", "no-store")
	n, err := backup.Write(c.Request.Context(), a.o.Backup.DB(), c.Writer, func(size int64) {
		c.Header("Content-Length", strconv.FormatInt(size, 10))
		c.Status(http.StatusOK)
	})
	if err != nil {
		if n == 0 && !c.Writer.Written() {
			c.Writer.Header().Del("Content-Length")
			c.Writer.Header().Del("Content-Disposition")
			apiError(c, err)
			return
		}
		a.o.Logger.Error("backup stream interrupted", "bytes", n, "err", err)
		return
	}
	a.o.Logger.Info("backup streamed through the admin API", "bytes", n)
}
