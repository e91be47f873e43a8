package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/store"
)

// ReportReader reads stored morning reports (*store.Store does).
type ReportReader interface {
	ListReports(ctx context.Context, limit int) ([]*store.Report, error)
	GetReport(ctx context.Context, id string) (*store.Report, error)
}

// KillSwitch is the global SELFCODE_ENABLED switch, changeable while the
// server runs.
type KillSwitch interface {
	Enabled() bool
	SetEnabled(on bool)
}

// overnightRoutes adds the morning report and kill switch endpoints:
//
//	GET  /api/reports         {"reports": [...]} newest first, ?limit= (default 100, at most 1000)
//	GET  /api/reports/{id}    one stored report: id, window_start, payload (the JSON that was POSTed), delivery state
//	GET  /api/enabled         {"enabled": bool}
//	POST /api/enabled         body {"enabled": bool}; lifting the switch starts stored jobs at once
func overnightRoutes(r *gin.Engine, o AdminOptions) {
	if o.Reports != nil {
		r.GET("/api/reports", func(c *gin.Context) {
			limit := 100
			if v := c.Query("limit"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					apiError(c, errs.E(errs.KindInvalid, "limit must be a positive integer", nil))
					return
				}
				limit = min(n, 1000)
			}
			reps, err := o.Reports.ListReports(c.Request.Context(), limit)
			if err != nil {
				apiError(c, err)
				return
			}
			if reps == nil {
				reps = []*store.Report{}
			}
			c.JSON(http.StatusOK, gin.H{"reports": reps})
		})
		r.GET("/api/reports/:id", func(c *gin.Context) {
			rep, err := o.Reports.GetReport(c.Request.Context(), c.Param("id"))
			if err != nil {
				apiError(c, err)
				return
			}
			c.JSON(http.StatusOK, rep)
		})
	}
	if o.Switch != nil {
		r.GET("/api/enabled", func(c *gin.Context) {
			c.JSON(http.StatusOK, gin.H{"enabled": o.Switch.Enabled()})
		})
		r.POST("/api/enabled", func(c *gin.Context) {
			var body struct {
				Enabled *bool `json:"enabled"`
			}
			if err := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, 4096)).Decode(&body); err != nil || body.Enabled == nil {
				apiError(c, errs.E(errs.KindInvalid, `body must be {"enabled": true|false}`, nil))
				return
			}
			o.Switch.SetEnabled(*body.Enabled)
			o.Logger.Warn("kill switch set through the admin API", "enabled", *body.Enabled)
			c.JSON(http.StatusOK, gin.H{"enabled": o.Switch.Enabled()})
		})
	}
}
