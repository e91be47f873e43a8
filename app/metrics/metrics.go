package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// StatsSource is what the store gauges are read from at scrape time.
type StatsSource interface {
	Stats(ctx context.Context) (store.Stats, error)
}

// Options configures New.
type Options struct {
	Stats StatsSource // may be nil
}

// Metrics holds selfcode's collectors.
type Metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	webhookDur prometheus.Histogram
	jobDur     *prometheus.HistogramVec
	jobsDone   *prometheus.CounterVec
	stageDur   *prometheus.HistogramVec
	queueWait  prometheus.Histogram
	// Pipeline counters: edit results, verify classifications, tokens per phase.
	edits   *prometheus.CounterVec
	classes *prometheus.CounterVec
	tokens  *prometheus.CounterVec
	// Money: dollars per model, calls whose model has no price, and each
	// finished job's cost.
	cost     *prometheus.CounterVec
	unpriced *prometheus.CounterVec
	jobCost  prometheus.Histogram
	// reaped counts the sandbox objects the reaper removed.
	reaped *prometheus.CounterVec
}

// New registers every collector on a fresh registry.
func New(o Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_webhook_deliveries_total", Help: "Webhook deliveries by event and result.",
		}, []string{"event", "result"}),
		webhookDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "selfcode_webhook_duration_seconds", Help: "Time to verify, store and answer a delivery.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, 1},
		}),
		jobDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "selfcode_job_duration_seconds", Help: "Duration of finished jobs.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 2700, 5400},
		}, []string{"kind", "state", "outcome"}),
		stageDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "selfcode_stage_duration_seconds", Help: "Duration of finished job stages (checkout, plan, edit, verify, fix, publish) and of the parts inside them (sandbox_start, setup, baseline, model): where a job's time goes.",
			Buckets: []float64{.1, .5, 1, 2, 5, 10, 20, 40, 80, 160, 320, 640, 1280},
		}, []string{"stage"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "selfcode_job_queue_wait_seconds", Help: "Time from a job being due (created, or its scheduled window) to a worker starting it.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 15, 60, 300, 1800},
		}),
		jobsDone: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_jobs_finished_total", Help: "Finished jobs by kind, state and outcome.",
		}, []string{"kind", "state", "outcome"}),
		edits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_edit_results_total", Help: "Model edit tool results (applied, no_match, not_unique, syntax_reverted, denied).",
		}, []string{"tool", "result"}),
		classes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_verify_classifications_total", Help: "Verification results against the baseline (pass, regression, preexisting, fixed).",
		}, []string{"class"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_model_tokens_total", Help: "Model tokens used by phase.",
		}, []string{"phase"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_model_cost_dollars_total", Help: "Dollars of model calls by model (priced by the price table).",
		}, []string{"model"}),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_model_calls_unpriced_total", Help: "Model calls whose model has no price, so their cost is unknown.",
		}, []string{"model"}),
		jobCost: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "selfcode_job_cost_dollars", Help: "Model cost of finished jobs whose cost is known.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 25},
		}),
		reaped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "selfcode_sandbox_reaped_total", Help: "Sandbox containers and work volumes the running server's reaper removed, by kind (container, volume) and reason (job_ended: its job no longer runs; orphan: not started by this process; deadline: past its deadline).",
		}, []string{"kind", "reason"}),
	}
	m.reg.MustRegister(m.deliveries, m.webhookDur, m.jobDur, m.jobsDone, m.stageDur, m.queueWait, m.edits, m.classes, m.tokens,
		m.cost, m.unpriced, m.jobCost, m.reaped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.Stats != nil {
		m.reg.MustRegister(&storeCollector{src: o.Stats})
	}
	return m
}

// Handler serves the registry in Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry exposes the registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Delivery counts one answered delivery.
func (m *Metrics) Delivery(event, result string, took time.Duration) {
	if event == "" {
		event = "unknown"
	}
	m.deliveries.WithLabelValues(event, result).Inc()
	m.webhookDur.Observe(took.Seconds())
}

// JobFinished records a finished job (implements worker.Observer).
func (m *Metrics) JobFinished(j *job.Job) {
	l := []string{string(j.Kind), string(j.State), string(j.Outcome)}
	m.jobsDone.WithLabelValues(l...).Inc()
	if d := j.Duration(); d > 0 {
		m.jobDur.WithLabelValues(l...).Observe(d.Seconds())
	}
	for _, s := range j.Stages {
		if !s.StartedAt.IsZero() && !s.FinishedAt.IsZero() && !s.FinishedAt.Before(s.StartedAt) {
			m.stageDur.WithLabelValues(string(s.Name)).Observe(s.FinishedAt.Sub(s.StartedAt).Seconds())
		}
	}
	// The parts inside the stages: sandbox start, setup, baseline, model.
	for _, sp := range j.Time {
		switch sp.Part {
		case stage.PartSandboxStart, stage.PartSetup, stage.PartBaseline, stage.PartModel:
			m.stageDur.WithLabelValues(string(sp.Part)).Observe(sp.Seconds)
		}
	}
	if j.Usage != nil && j.Usage.CostUSD != nil {
		m.jobCost.Observe(*j.Usage.CostUSD)
	}
	due := j.CreatedAt
	if j.ScheduledFor.After(due) {
		due = j.ScheduledFor
	}
	if !due.IsZero() && !j.StartedAt.IsZero() && !j.StartedAt.Before(due) {
		m.queueWait.Observe(j.StartedAt.Sub(due).Seconds())
	}
}

type storeCollector struct{ src StatsSource }

var (
	jobsDesc  = prometheus.NewDesc("selfcode_jobs", "Stored jobs by state.", []string{"state"}, nil)
	queueDesc = prometheus.NewDesc("selfcode_queue_depth", "Jobs waiting to run, by lane (pipeline, control, scheduled).", []string{"lane"}, nil)
	leaseDesc = prometheus.NewDesc("selfcode_leased_jobs", "Jobs leased by a worker.", nil, nil)
	upDesc    = prometheus.NewDesc("selfcode_store_up", "1 when the job store answered the scrape.", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- queueDesc
	ch <- leaseDesc
	ch <- upDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.src.Stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	for _, s := range job.States {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(st.ByState[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(st.Queued), "pipeline")
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(st.ControlQueue), "control")
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(st.Scheduled), "scheduled")
	ch <- prometheus.MustNewConstMetric(leaseDesc, prometheus.GaugeValue, float64(st.Leased))
}

// Edit counts one model edit tool result (pipeline.Observer).
func (m *Metrics) Edit(tool, result string) { m.edits.WithLabelValues(tool, result).Inc() }

// Verify counts verification classifications (pipeline.Observer).
func (m *Metrics) Verify(class string, n int) { m.classes.WithLabelValues(class).Add(float64(n)) }

// Tokens counts model tokens by phase (pipeline.Observer).
func (m *Metrics) Tokens(phase string, n int) { m.tokens.WithLabelValues(phase).Add(float64(n)) }

// Cost counts one model call's price in dollars, or a call whose model has
// no price (pipeline.Observer).
func (m *Metrics) Cost(model string, dollars float64, priced bool) {
	if !priced {
		m.unpriced.WithLabelValues(model).Inc()
		return
	}
	m.cost.WithLabelValues(model).Add(dollars)
}

// SandboxReaped counts one container or volume the sandbox reaper removed
// (sandbox.ReapObserver).
func (m *Metrics) SandboxReaped(kind, reason string) { m.reaped.WithLabelValues(kind, reason).Inc() }
