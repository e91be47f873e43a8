package handlers

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

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

// AdminOptions configures the admin listener.
type AdminOptions struct {
	Jobs     JobReader
	Canceler Canceler
	Metrics  http.Handler
	Logger   *slog.Logger
}

// NewAdmin builds the admin engine: /metrics, /api/jobs…, and the dashboard.
func NewAdmin(o AdminOptions) (*gin.Engine, error) {
	if o.Jobs == nil || o.Canceler == nil {
		return nil, errs.E(errs.KindInvalid, "admin API needs a job reader and a canceler", nil)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	a := &admin{o: o}
	r := gin.New()
	r.Use(gin.Recovery())
	if o.Metrics != nil {
		r.GET("/metrics", gin.WrapH(o.Metrics))
	}
	r.GET("/api/jobs", a.list)
	r.GET("/api/jobs/:id", a.get)
	r.GET("/api/jobs/:id/artifacts/:name", a.artifact)
	r.POST("/api/jobs/:id/cancel", a.cancel)
	r.GET("/", a.dashboard)
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

var dashboardTmpl = template.Must(template.New("dash").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>selfcode jobs</title>
<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left}</style>
</head><body><h1>selfcode jobs</h1>
<table><thead><tr><th>id</th><th>state</th><th>outcome</th><th>repository</th><th>issue</th><th>created</th><th>tokens</th></tr></thead><tbody>
{{range .}}<tr><td><a href="/api/jobs/{{.ID}}">{{.ID}}</a></td><td>{{.State}}</td><td>{{.Outcome}}</td><td>{{.Repository}}</td>
<td>{{if .IssueURL}}<a href="{{.IssueURL}}">#{{.Issue}}</a>{{else}}#{{.Issue}}{{end}}</td><td>{{.CreatedAt.Format "2006-01-02 15:04:05"}}</td><td>{{.Tokens}}</td></tr>
{{else}}<tr><td colspan="7">no jobs yet</td></tr>{{end}}
</tbody></table></body></html>`))

func (a *admin) dashboard(c *gin.Context) {
	jobs, _, err := a.o.Jobs.List(c.Request.Context(), store.ListOptions{Limit: 100})
	if err != nil {
		apiError(c, err)
		return
	}
	c.Status(http.StatusOK)
	c.Header("Content-Type", "text/html; charset=utf-8")
	if err := dashboardTmpl.Execute(c.Writer, jobs); err != nil {
		a.o.Logger.Error("render dashboard", "err", err)
	}
}
