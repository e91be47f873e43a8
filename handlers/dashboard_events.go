package handlers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
)

// The live log of a job page is a server-sent event stream. The handler polls
// the stored job (bbolt reads are cheap and the store has no per-job change
// feed) and sends:
//
//	event: log   data: logLine   each log entry the client has not had yet
//	event: job   data: jobStatus whenever the job's updated_at changes
//	event: end   data: jobStatus once the job has ended; the stream closes
//
// A stream is bounded: it ends with the job, when the client leaves, when the
// server shuts down, or after maxStream (the browser then reconnects on its
// own and gets the entries again, which the script drops by key). A job that
// has already ended answers 204, which tells EventSource not to reconnect.
const (
	maxStream     = 10 * time.Minute
	keepAlive     = 15 * time.Second
	reconnectWait = 2 * time.Second
)

// jobStatus is the part of a job the page updates in place.
type jobStatus struct {
	State           job.State  `json:"state"`
	Outcome         string     `json:"outcome"`
	Tokens          int        `json:"tokens"`
	UpdatedAt       time.Time  `json:"updated_at"`
	Duration        string     `json:"duration"`
	CancelRequested bool       `json:"cancel_requested"`
	Stages          []stageRow `json:"stages"`
	PRURL           string     `json:"pr_url,omitempty"`
	Error           string     `json:"error,omitempty"`
}

func statusOf(j *job.Job, now time.Time) jobStatus {
	return jobStatus{State: j.State, Outcome: string(j.Outcome), Tokens: j.Tokens, UpdatedAt: j.UpdatedAt,
		Duration: jobDuration(j, now), CancelRequested: j.CancelRequested, Stages: stageRows(j, now),
		PRURL: j.Publication.PRURL, Error: j.Error}
}

func (d *dashboard) events(c *gin.Context) {
	ctx := c.Request.Context()
	j, err := d.o.Jobs.Get(ctx, c.Param("id"))
	if err != nil {
		apiError(c, err)
		return
	}
	if j.State.Terminal() {
		c.Status(http.StatusNoContent)
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	w := &sseWriter{w: c.Writer, flush: c.Writer.Flush}
	w.retry(reconnectWait)

	stopping := d.serverStopping(c.Request)
	poll := time.NewTicker(d.poll)
	defer poll.Stop()
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	deadline := time.NewTimer(maxStream)
	defer deadline.Stop()

	sent := map[string]bool{}
	var lastUpdate time.Time
	for {
		now := time.Now()
		for _, l := range logLines(j) {
			if !sent[l.Key] {
				sent[l.Key] = true
				w.event("log", l)
			}
		}
		if !j.UpdatedAt.Equal(lastUpdate) {
			lastUpdate = j.UpdatedAt
			w.event("job", statusOf(j, now))
		}
		if j.State.Terminal() {
			w.event("end", statusOf(j, now))
			return
		}
		if w.err != nil {
			return // the client is gone
		}
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-deadline.C:
			return
		case <-ping.C:
			w.comment("ping")
			continue
		case <-poll.C:
		}
		next, err := d.o.Jobs.Get(ctx, j.ID)
		if err != nil {
			if errs.KindOf(err) == errs.KindNotFound {
				w.event("end", statusOf(j, time.Now()))
			}
			return
		}
		j = next
	}
}

// serverStopping returns a channel closed when the http.Server serving r
// shuts down, so open streams do not hold up a graceful shutdown. One hook
// is registered per server.
func (d *dashboard) serverStopping(r *http.Request) <-chan struct{} {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ch, ok := d.stopping[srv]
	if !ok {
		ch = make(chan struct{})
		d.stopping[srv] = ch
		srv.RegisterOnShutdown(func() { close(ch) })
	}
	return ch
}

// sseWriter writes the text/event-stream format and remembers the first
// write error (a client that went away).
type sseWriter struct {
	w     io.Writer
	flush func()
	id    int
	err   error
}

func (s *sseWriter) write(text string) {
	if s.err != nil {
		return
	}
	if _, err := io.WriteString(s.w, text); err != nil {
		s.err = err
		return
	}
	s.flush()
}

func (s *sseWriter) retry(d time.Duration) {
	s.write(fmt.Sprintf("retry: %d\n\n", d.Milliseconds()))
}

func (s *sseWriter) comment(text string) { s.write(": " + text + "\n\n") }

// event sends one event; data is JSON, which never contains a raw newline.
func (s *sseWriter) event(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.id++
	s.write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", s.id, name, data))
}
