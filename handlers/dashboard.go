package handlers

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// The dashboard: server-rendered pages on the admin listener, with one small
// script for the live log (server-sent events, see dashboard_events.go) and
// the cancel button. Everything is embedded; there is no build step.
//
//	GET /                      job list (?state=, ?cursor=)
//	GET /jobs/:id              job page: stages, log, plan, verification, diff
//	GET /jobs/:id/events       live log of a job that has not ended (SSE)
//	GET /static/dashboard.css, /static/dashboard.js

//go:embed static
var staticFiles embed.FS

// Bounds that keep a page a page, whatever a job produced.
const (
	maxDiffBytes   = 1 << 20
	maxDiffLines   = 5000
	maxOutputBytes = 64 << 10
	listPageSize   = 50
)

// contentPolicy allows the embedded stylesheet and script only; nothing in a
// page (issue text, model output, diffs) can load or run anything else.
const contentPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type dashboard struct {
	o     AdminOptions
	pages *template.Template
	poll  time.Duration

	mu       sync.Mutex
	stopping map[*http.Server]chan struct{}
}

func newDashboard(o AdminOptions) (*dashboard, error) {
	pages, err := template.New("").Funcs(template.FuncMap{
		"ts":       formatTime,
		"clock":    formatClock,
		"dur":      formatDuration,
		"jobDur":   jobDuration,
		"terminal": func(s job.State) bool { return s.Terminal() },
		"bytes":    formatBytes,
		"short":    shortImage,
	}).ParseFS(staticFiles, "static/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse dashboard templates: %w", err)
	}
	poll := o.LivePoll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	return &dashboard{o: o, pages: pages, poll: poll, stopping: map[*http.Server]chan struct{}{}}, nil
}

func (d *dashboard) routes(r *gin.Engine) error {
	assets, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return fmt.Errorf("dashboard assets: %w", err)
	}
	r.GET("/", d.list)
	r.GET("/jobs/:id", d.job)
	r.GET("/jobs/:id/events", d.events)
	d.cacheRoutes(r)
	for _, name := range []string{"dashboard.css", "dashboard.js"} {
		r.StaticFileFS("/static/"+name, name, http.FS(assets))
	}
	return nil
}

func (d *dashboard) render(c *gin.Context, status int, name string, data any) {
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.Header("Content-Security-Policy", contentPolicy)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	c.Status(status)
	if err := d.pages.ExecuteTemplate(c.Writer, name, data); err != nil {
		d.o.Logger.Error("render dashboard page", "page", name, "err", err)
	}
}

func (d *dashboard) fail(c *gin.Context, err error) {
	d.render(c, errs.HTTPStatus(err), "error.html", err.Error())
}

// listView is the job list page.
type listView struct {
	Jobs   []*job.Job
	State  string
	States []job.State
	Next   string
	Now    time.Time
}

func (d *dashboard) list(c *gin.Context) {
	o := store.ListOptions{Limit: listPageSize, Cursor: c.Query("cursor"), State: job.State(c.Query("state"))}
	if o.State != "" && !o.State.Valid() {
		d.render(c, http.StatusBadRequest, "error.html", "unknown state "+string(o.State))
		return
	}
	if o.Cursor != "" && job.ParseID(o.Cursor) != nil {
		d.render(c, http.StatusBadRequest, "error.html", "invalid cursor")
		return
	}
	jobs, next, err := d.o.Jobs.List(c.Request.Context(), o)
	if err != nil {
		d.fail(c, err)
		return
	}
	d.render(c, http.StatusOK, "list.html", listView{Jobs: jobs, State: string(o.State), States: job.States, Next: next, Now: time.Now()})
}

// jobView is the job page.
type jobView struct {
	Job       *job.Job
	Live      bool
	Log       []logLine
	Stages    []stageRow
	Plan      *planDoc
	Verify    []verifyRound
	Diff      []diffLine
	DiffCut   bool
	Artifacts []artifactRow
	Problems  []string // artifacts that could not be read or decoded
	Now       time.Time
}

type stageRow struct {
	job.Stage
	Took time.Duration `json:"took"`
}

type artifactRow struct {
	Name string
	Size int
}

func (d *dashboard) job(c *gin.Context) {
	ctx := c.Request.Context()
	j, err := d.o.Jobs.Get(ctx, c.Param("id"))
	if err != nil {
		d.fail(c, err)
		return
	}
	arts, err := d.o.Jobs.Artifacts(ctx, j.ID)
	if err != nil {
		d.fail(c, err)
		return
	}
	now := time.Now()
	v := jobView{Job: j, Live: !j.State.Terminal(), Log: logLines(j), Stages: stageRows(j, now), Now: now}
	names := make([]string, 0, len(arts))
	for name, size := range arts {
		names = append(names, name)
		v.Artifacts = append(v.Artifacts, artifactRow{Name: name, Size: size})
	}
	sort.Strings(names)
	sort.Slice(v.Artifacts, func(a, b int) bool { return v.Artifacts[a].Name < v.Artifacts[b].Name })
	read := func(name string) []byte {
		data, err := d.o.Jobs.Artifact(ctx, j.ID, name)
		if err != nil {
			v.Problems = append(v.Problems, fmt.Sprintf("%s: %v", name, err))
			return nil
		}
		return data
	}
	if _, ok := arts["plan.json"]; ok {
		if data := read("plan.json"); data != nil {
			p, err := decodePlan(data)
			if err != nil {
				v.Problems = append(v.Problems, "plan.json: "+err.Error())
			}
			v.Plan = p
		}
	}
	for _, name := range verifyArtifacts(names) {
		data := read(name)
		if data == nil {
			continue
		}
		r, err := decodeVerify(name, data)
		if err != nil {
			v.Problems = append(v.Problems, name+": "+err.Error())
			continue
		}
		v.Verify = append(v.Verify, r)
	}
	if _, ok := arts["diff.patch"]; ok {
		if data := read("diff.patch"); data != nil {
			v.Diff, v.DiffCut = diffLines(data)
		}
	}
	d.render(c, http.StatusOK, "job.html", v)
}

func stageRows(j *job.Job, now time.Time) []stageRow {
	out := make([]stageRow, 0, len(j.Stages))
	for _, s := range j.Stages {
		r := stageRow{Stage: s}
		switch {
		case s.StartedAt.IsZero():
		case !s.FinishedAt.IsZero():
			r.Took = s.FinishedAt.Sub(s.StartedAt)
		case s.Status == stage.Running && !j.State.Terminal():
			r.Took = now.Sub(s.StartedAt)
		}
		out = append(out, r)
	}
	return out
}

// logLine is one entry of a job's log. The log is derived from the stored
// job alone (creation, start, each stage's start and result, cancel request,
// end), so the page and the event stream agree and Key identifies an entry
// across reconnects.
type logLine struct {
	Key  string    `json:"key"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"` // job, stage, pass, fail, skipped, cancel
	Text string    `json:"text"`
}

func logLines(j *job.Job) []logLine {
	var out []logLine
	add := func(key string, t time.Time, kind, text string) {
		out = append(out, logLine{Key: key, Time: t, Kind: kind, Text: text})
	}
	trig := string(j.Trigger.Source)
	if j.Trigger.Sender != "" {
		trig += " by " + j.Trigger.Sender
	}
	add("created", j.CreatedAt, "job", fmt.Sprintf("%s job created (%s)", j.Kind, trig))
	if !j.ScheduledFor.IsZero() {
		add("scheduled", j.CreatedAt, "job", "scheduled for "+formatTime(j.ScheduledFor))
	}
	a := "a" + strconv.Itoa(j.Attempts) + ":"
	if !j.StartedAt.IsZero() {
		add(a+"started", j.StartedAt, "job", fmt.Sprintf("running (attempt %d)", j.Attempts))
	}
	for _, s := range j.Stages {
		name, status := string(s.Name), string(s.Status)
		add(a+"stage:"+name+":start", s.StartedAt, "stage", name+" started")
		if !s.Status.Done() {
			continue
		}
		text := name + ": " + status
		if s.Summary != "" {
			text += " — " + s.Summary
		}
		at := s.FinishedAt
		if at.IsZero() {
			at = s.StartedAt
		}
		add(a+"stage:"+name+":"+status, at, status, text)
	}
	if j.CancelRequested && !j.State.Terminal() {
		add(a+"cancel", j.UpdatedAt, "cancel", "cancel requested; stopping")
	}
	if j.State.Terminal() {
		text := "finished: " + string(j.State)
		if j.Outcome != "" {
			text += " (" + string(j.Outcome) + ")"
		}
		if j.Reason != "" {
			text += " — " + j.Reason
		}
		at := j.FinishedAt
		if at.IsZero() {
			at = j.UpdatedAt
		}
		add("end", at, "job", text)
	}
	sort.SliceStable(out, func(x, y int) bool { return out[x].Time.Before(out[y].Time) })
	return out
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func formatClock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("15:04:05")
}

// formatDuration rounds to what a reader needs: 850ms, 42s, 3m05s, 1h02m.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

// jobDuration is how long a job ran (so far, while it runs).
func jobDuration(j *job.Job, now time.Time) string {
	if j.StartedAt.IsZero() {
		return "–"
	}
	end := j.FinishedAt
	if end.IsZero() {
		if j.State.Terminal() {
			end = j.UpdatedAt
		} else {
			end = now
		}
	}
	return formatDuration(end.Sub(j.StartedAt))
}

// diffLine is one line of a unified diff with its CSS class.
type diffLine struct {
	Text  string
	Class string // add, del, hunk, file, ""
}

func diffLines(data []byte) ([]diffLine, bool) {
	cut := false
	if len(data) > maxDiffBytes {
		data, cut = data[:maxDiffBytes], true
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > maxDiffLines {
		lines, cut = lines[:maxDiffLines], true
	}
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		class := ""
		switch {
		case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "),
			strings.HasPrefix(l, "index "), strings.HasPrefix(l, "new file"), strings.HasPrefix(l, "deleted file"):
			class = "file"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		}
		out[i] = diffLine{Text: l, Class: class}
	}
	return out, cut
}

// The shapes of the pipeline's plan.json and verify-*.json artifacts, as far
// as the page shows them (contract section 8 for the plan).
type planDoc struct {
	Summary string `json:"summary"`
	Steps   []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
		Files []struct {
			Path    string `json:"path"`
			Action  string `json:"action"`
			Purpose string `json:"purpose"`
		} `json:"files"`
		Acceptance []string `json:"acceptance"`
	} `json:"steps"`
	Risks     []string `json:"risks"`
	Questions []string `json:"questions"`
}

type verifyRound struct {
	Name   string // "baseline" or "round N"
	Passed bool
	Cmds   []verifyCmd
}

type verifyCmd struct {
	Name      string        `json:"name"`
	Run       string        `json:"run"`
	Passed    bool          `json:"passed"`
	ExitCode  int           `json:"exit_code"`
	Duration  time.Duration `json:"duration"`
	Output    string        `json:"output"`
	TimedOut  bool          `json:"timed_out"`
	Truncated bool          `json:"truncated"`
	OOMKilled bool          `json:"oom_killed"`
	Error     string        `json:"error"`
	Skipped   bool          `json:"skipped"`
}

// Status is the word shown for a command.
func (c verifyCmd) Status() string {
	switch {
	case c.Skipped:
		return "skipped"
	case c.Error != "":
		return "error"
	case c.TimedOut:
		return "timeout"
	case c.OOMKilled:
		return "oom"
	case c.Passed:
		return "pass"
	default:
		return "fail"
	}
}

// verifyArtifacts orders verify-base.json first, then verify-N.json by N.
func verifyArtifacts(names []string) []string {
	var base []string
	type round struct {
		n    int
		name string
	}
	var rounds []round
	for _, name := range names {
		mid, ok := strings.CutPrefix(name, "verify-")
		if !ok {
			continue
		}
		mid, ok = strings.CutSuffix(mid, ".json")
		if !ok {
			continue
		}
		if mid == "base" {
			base = append(base, name)
			continue
		}
		if n, err := strconv.Atoi(mid); err == nil {
			rounds = append(rounds, round{n, name})
		}
	}
	sort.Slice(rounds, func(a, b int) bool { return rounds[a].n < rounds[b].n })
	for _, r := range rounds {
		base = append(base, r.name)
	}
	return base
}

func decodePlan(data []byte) (*planDoc, error) {
	var p planDoc
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("not a plan: %w", err)
	}
	return &p, nil
}

func decodeVerify(name string, data []byte) (verifyRound, error) {
	var run struct {
		Commands []verifyCmd `json:"commands"`
		Passed   bool        `json:"passed"`
	}
	if err := json.Unmarshal(data, &run); err != nil {
		return verifyRound{}, fmt.Errorf("not a verification run: %w", err)
	}
	r := verifyRound{Name: "baseline (before the change)", Passed: run.Passed, Cmds: run.Commands}
	if n, ok := strings.CutPrefix(strings.TrimSuffix(name, ".json"), "verify-"); ok && n != "base" {
		r.Name = "round " + n
	}
	for i := range r.Cmds {
		if len(r.Cmds[i].Output) > maxOutputBytes {
			r.Cmds[i].Output = r.Cmds[i].Output[:maxOutputBytes] + "\n… (cut; the full output is in " + name + ")"
		}
	}
	return r, nil
}
