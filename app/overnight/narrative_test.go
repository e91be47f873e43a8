package overnight_test

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/budget"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/fakeopenai"
)

// The morning report's narrative is the server's own model use: it is
// asked of the daily budgets first (the server's account, apart from every
// installation's), and skipped for the plain narrative when they are
// spent; once made, the call is priced, charged to the server's account
// and counted in /metrics.
func TestReportNarrativeIsBudgetedPricedAndCounted(t *testing.T) {
	t.Parallel()
	eng := newEngine()
	recv := newReceiver(t, 0)
	h := newHarness(t, eng, []string{"SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL,
		"SELFCODE_DAILY_COST_BUDGET=1", "SELFCODE_MODEL_PRICES=reporter=10,1,20"}, nil,
		fakeopenai.Step{Role: "reporter", Content: reporterSays, PromptTokens: 400, CompletionTokens: 100})
	ctx := context.Background()
	day1, day2 := windowStart.Format(time.DateOnly), windowStart.AddDate(0, 0, 1).Format(time.DateOnly)
	// The server has spent its dollar of the first day.
	if _, err := h.Server.Store.AddUsage(ctx, budget.ServerAccount, day1, store.DayUsage{NanoDollars: store.NanoDollars(1)}); err != nil {
		t.Fatal(err)
	}
	report := func(issue int, title string) string {
		t.Helper()
		id := h.Label("labeled", "alpha", issue, "selfcode:overnight", title)
		start := h.Job(id).ScheduledFor
		h.clk.Set(start.Add(time.Second))
		h.Wait(id)
		h.clk.Set(start.Add(6*time.Hour + time.Second))
		select {
		case body := <-recv.got:
			return validate(t, body).Narrative
		case <-time.After(60 * time.Second):
			t.Fatalf("no report\n%s", h.Logs())
		}
		return ""
	}
	metrics := func() string {
		_, body := h.Admin(http.MethodGet, "/metrics", "")
		return string(body)
	}

	// The first window: the installation's budget is untouched, but the
	// server's is spent, so the model is not asked.
	a1 := h.Issue("alpha", "Greeting is too short", "selfcode:overnight")
	if n := report(a1, "Greeting is too short"); n == reporterSays || !strings.Contains(n, "1 passed") {
		t.Fatalf("narrative with the server's budget spent: %q", n)
	}
	if n := len(h.Model.RequestsFor("reporter")); n != 0 {
		t.Fatalf("the reporter was asked %d times over budget", n)
	}
	if m := metrics(); strings.Contains(m, `phase="reporter"`) {
		t.Fatal("/metrics counts a reporter call that was not made")
	}

	// The next day's budget is fresh: the model writes the narrative, and
	// its call is charged to the server's account and counted.
	a2 := h.Issue("alpha", "Greeting lacks a name", "selfcode:overnight")
	if n := report(a2, "Greeting lacks a name"); n != reporterSays {
		t.Fatalf("narrative %q, want the reporter's", n)
	}
	// (400×10 + 100×20)/1e6 = $0.006.
	const cost = 0.006
	u, err := h.Server.Store.Usage(ctx, budget.ServerAccount, day2)
	if err != nil || u.Tokens != 500 || math.Abs(u.Dollars()-cost) > 1e-9 {
		t.Fatalf("the server's account on %s: %+v (%v), want 500 tokens and $%v", day2, u, err, cost)
	}
	if u, _ := h.Server.Store.Usage(ctx, 1, day2); u.Tokens != 0 || u.NanoDollars != 0 {
		t.Fatalf("the report was charged to an installation: %+v", u)
	}
	m := metrics()
	for _, want := range []string{`selfcode_model_tokens_total{phase="reporter"} 500`, `selfcode_model_cost_dollars_total{model="reporter"} 0.006`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
