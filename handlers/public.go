package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// ReadyCheck is one dependency /readyz asks.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// PublicOptions configures the public listener.
type PublicOptions struct {
	Webhook WebhookOptions
	Ready   []ReadyCheck
}

// NewPublic builds the public engine: POST /webhook, GET /healthz, GET /readyz.
func NewPublic(o PublicOptions) (*gin.Engine, error) {
	wh, err := Webhook(o.Webhook)
	if err != nil {
		return nil, err
	}
	r := gin.New()
	r.Use(gin.Recovery())
	r.POST("/webhook", wh)
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", readyz(o.Ready))
	return r, nil
}

func readyz(checks []ReadyCheck) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
		defer cancel()
		status := http.StatusOK
		out := gin.H{}
		for _, ch := range checks {
			if err := ch.Check(ctx); err != nil {
				status = http.StatusServiceUnavailable
				out[ch.Name] = err.Error()
			} else {
				out[ch.Name] = "ok"
			}
		}
		c.JSON(status, gin.H{"ready": status == http.StatusOK, "checks": out})
	}
}
