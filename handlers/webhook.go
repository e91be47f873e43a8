package handlers

import (
	"bytes"
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

// presizeLimit bounds the buffer reserved from a delivery's Content-Length
// before its signature is checked; larger bodies grow it as they arrive.
const presizeLimit = 1 << 20

// Submitter stores a delivery's effect durably. Expect announces a
// delivery as it comes in, so the commit it joins waits for it instead of
// syncing without it.
type Submitter interface {
	Expect() *store.Arrival
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
	// A signed delivery is announced to the store's group commit while its
	// body is read, checked and decoded, so a commit under load waits for it.
	arrival := w.o.Store.Expect()
	defer arrival.Cancel()
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, w.o.MaxBody)
	payload, err := validPayload(c.Request, w.o.Secret)
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
	sub.Arrival = arrival
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

// validPayload reads the body into a buffer sized from Content-Length (a
// growing buffer was a tenth of intake's CPU: docs/benchmarks.md) and
// returns it when its HMAC matches; a form-encoded body is left to
// go-github, which unwraps its payload field. The size is believed only up
// to presizeLimit: an unsigned request must not make intake reserve 25 MiB
// by claiming it.
func validPayload(r *http.Request, secret []byte) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return github.ValidatePayload(r, secret)
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), presizeLimit)+bytes.MinRead))
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, err
	}
	if err := github.ValidateSignature(r.Header.Get(github.SHA256SignatureHeader), buf.Bytes(), secret); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func supportedContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "application/x-www-form-urlencoded")
}
