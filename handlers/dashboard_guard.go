package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// sameOrigin refuses state-changing requests that a browser sends on behalf
// of another site (cross-site request forgery against the admin listener,
// e.g. a page POSTing to http://127.0.0.1:9090/api/jobs/…/cancel). Browsers
// mark such requests with Sec-Fetch-Site or Origin; the CLI and other
// non-browser clients send neither and pass. GET, HEAD and OPTIONS pass.
func sameOrigin() gin.HandlerFunc {
	guard := http.NewCrossOriginProtection()
	return func(c *gin.Context) {
		if err := guard.Check(c.Request); err != nil {
			c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "cross-origin request refused: " + err.Error()})
			return
		}
		c.Next()
	}
}
