package handlers

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/go-github/v60/github"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/intake"
	"github.com/selfcode/selfcode/app/store"
)

// MaxWebhookBody is GitHub's payload cap: larger deliveries are refused.
const MaxWebhookBody = 25 << 20

// Submitter stores a delivery's effect durably.
type Submitter interface {
	Submit(ctx context.Context, sub store.Submission) (store.Receipt, error)
}

// DeliveryObserver is told how each delivery was answered (metrics).
type DeliveryObserver interface {
	Delivery(event, result string, took time.Duration)
}

// WebhookOptions configures the webhook handler.
type WebhookOptions struct {
	Secret   []byte
	Router   *intake.Router
	Store    Submitter
	Observer DeliveryObserver // may be nil
	Logger   *slog.Logger
	MaxBody  int64 // default MaxWebhookBody
}

type webhook struct{ o WebhookOptions }

// Webhook returns the POST /webhook handler. It refuses to exist without a
// secret, so an unsigned endpoint can never be served.
func Webhook(o WebhookOptions) (gin.HandlerFunc, error) {
	if len(o.Secret) == 0 {
		return nil, errs.E(errs.KindInvalid, "webhook secret is empty (SELFCODE_WEBHOOK_SECRET)", nil)
	}
	if o.Router == nil || o.Store == nil {
		return nil, errs.E(errs.KindInvalid, "webhook handler needs a router and a store", nil)
	}
	if o.MaxBody <= 0 {
		o.MaxBody = MaxWebhookBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	w := &webhook{o: o}
	return w.serve, nil
}

func (w *webhook) serve(c *gin.Context) {
	start := time.Now()
	event := github.WebHookType(c.Request)
	delivery := github.DeliveryID(c.Request)
	log := w.o.Logger.With("delivery_id", delivery, "event", event)
	result := "error"
	defer func() {
		if w.o.Observer != nil {
			w.o.Observer.Delivery(event, result, time.Since(start))
		}
	}()
	fail := func(status int, msg string) {
		result = http.StatusText(status)
		log.Warn("webhook delivery refused", "status", status, "reason", msg)
		c.AbortWithStatusJSON(status, gin.H{"error": msg})
	}

	// 1. Signature first: nothing is parsed or stored before it checks out.
	// go-github falls back to the SHA-1 header when the SHA-256 one is
	// absent; GitHub documents SHA-1 as legacy, so it is not accepted.
	if c.GetHeader(github.SHA256SignatureHeader) == "" {
		fail(http.StatusUnauthorized, "missing X-Hub-Signature-256")
		return
	}
	if c.Request.ContentLength > w.o.MaxBody {
		fail(http.StatusRequestEntityTooLarge, "payload over 25 MiB")
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, w.o.MaxBody)
	payload, err := github.ValidatePayload(c.Request, w.o.Secret)
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			fail(http.StatusRequestEntityTooLarge, "payload over 25 MiB")
		case !supportedContentType(c.GetHeader("Content-Type")):
			fail(http.StatusBadRequest, "unsupported Content-Type")
		default:
			fail(http.StatusUnauthorized, "signature does not match")
		}
		return
	}

	// 2. Decide what the delivery asks for.
	d, err := w.o.Router.Route(event, payload)
	if err != nil {
		fail(errs.HTTPStatus(err), err.Error())
		return
	}

	// 3. Store it durably, then answer.
	ctx := c.Request.Context()
	sub := d.Submission
	sub.DeliveryID = delivery
	rc, err := w.o.Store.Submit(ctx, sub)
	if err != nil {
		status := errs.HTTPStatus(err)
		if status == http.StatusInternalServerError {
			status = http.StatusServiceUnavailable
		}
		log.Error("store delivery", "err", err)
		fail(status, "store unavailable")
		return
	}
	switch {
	case rc.Duplicate:
		result = "duplicate"
		log.Debug("duplicate delivery", "job_id", rc.JobID)
		c.JSON(http.StatusOK, gin.H{"duplicate": true})
	case rc.JobID != "":
		result = "accepted"
		attrs := []any{"job_id", rc.JobID, "status", rc.Status}
		if sub.Job != nil {
			attrs = append(attrs, "repo", sub.Job.Repo.FullName(), "issue", sub.Job.Issue, "installation_id", sub.Job.InstallationID)
		}
		if rc.Superseded != "" {
			attrs = append(attrs, "superseded", rc.Superseded)
		}
		log.Info("delivery stored", attrs...)
		c.JSON(http.StatusAccepted, gin.H{"job_id": rc.JobID, "status": rc.Status})
	default:
		result = "ignored"
		log.Debug("delivery ignored", "reason", rc.Ignored)
		c.JSON(http.StatusOK, gin.H{"ignored": rc.Ignored})
	}
}

func supportedContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "application/x-www-form-urlencoded")
}
