package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/pipeline/chat"
)

// roles are the roles a job uses a model for.
func roles() []chat.Role {
	return []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer, chat.RoleReporter}
}

// client is the model client the model checks share: one attempt per
// call, no retries, so a broken endpoint is reported at once.
func (d *Doctor) client() (*llm.Client, error) {
	return d.model.get(func() (*llm.Client, error) {
		models := map[chat.Role]string{}
		for _, r := range roles() {
			models[r] = d.cfg.ModelFor(string(r))
		}
		return llm.New(llm.Options{BaseURL: d.cfg.LLMBaseURL, APIKey: d.cfg.LLMAPIKey, Models: models,
			MaxRetries: -1, HTTPTimeout: 30 * time.Second, Logger: d.o.Logger})
	})
}

// list asks the endpoint for its models once. A server that does not list
// models (404, 405) gives no list and no error.
func (d *Doctor) list(ctx context.Context) ([]string, error) {
	return d.listed.get(func() ([]string, error) {
		c, err := d.client()
		if err != nil {
			return nil, err
		}
		names, err := c.ListModels(ctx)
		var se *llm.StatusError
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
			return nil, nil
		}
		return names, err
	})
}

// modelFix says what to do about a failed model call.
func (d *Doctor) modelFix(err error) string {
	switch {
	case errors.Is(err, llm.ErrUnauthorized):
		return "check SELFCODE_LLM_API_KEY (or OPENAI_API_KEY): the endpoint refuses it"
	case errors.Is(err, llm.ErrConnection), errors.Is(err, llm.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("check SELFCODE_LLM_BASE_URL (%s) and that this machine reaches it (a proxy goes in HTTPS_PROXY)", d.cfg.LLMBaseURL)
	case errors.Is(err, llm.ErrRateLimited):
		return "the endpoint rate-limits this key or its quota is used up: check the account's limits and billing"
	case errors.Is(err, llm.ErrBadRequest):
		return "the endpoint rejects the request: check the model names (SELFCODE_LLM_MODEL and the per-role ones) and that the endpoint speaks OpenAI's chat completions"
	}
	return "check SELFCODE_LLM_BASE_URL, SELFCODE_LLM_API_KEY and the model names"
}

func (d *Doctor) checkModelEndpoint(ctx context.Context) Result {
	if _, err := d.client(); err != nil {
		return fail(err.Error(), "set SELFCODE_LLM_BASE_URL to an OpenAI-compatible API base, e.g. https://api.openai.com/v1")
	}
	models, err := d.list(ctx)
	if err != nil {
		return fail(d.cfg.LLMBaseURL+": "+err.Error(), d.modelFix(err))
	}
	if models == nil {
		return ok("%s answers (it does not list its models)", d.cfg.LLMBaseURL)
	}
	return ok("%s answers and lists %d model(s)", d.cfg.LLMBaseURL, len(models))
}

// configuredModels is each distinct model with the roles that use it.
func (d *Doctor) configuredModels() (names []string, rolesOf map[string][]string) {
	rolesOf = map[string][]string{}
	for _, r := range roles() {
		m := d.cfg.ModelFor(string(r))
		if _, seen := rolesOf[m]; !seen {
			names = append(names, m)
		}
		rolesOf[m] = append(rolesOf[m], string(r))
	}
	return names, rolesOf
}

func (d *Doctor) checkModelNames(ctx context.Context) Result {
	if d.checkModelEndpoint(ctx).Status != OK {
		return skip(CheckModelEndpoint)
	}
	listed, _ := d.list(ctx)
	names, rolesOf := d.configuredModels()
	var used []string
	for _, m := range names {
		used = append(used, fmt.Sprintf("%s (%s)", m, strings.Join(rolesOf[m], ", ")))
	}
	if listed == nil {
		return warn("cannot tell whether "+strings.Join(used, ", ")+" exist: the endpoint does not list its models",
			"the model call below tries one; make sure each configured name is one the endpoint serves")
	}
	var absent []string
	for _, m := range names {
		if !slices.Contains(listed, m) {
			absent = append(absent, fmt.Sprintf("%s (%s)", m, strings.Join(rolesOf[m], ", ")))
		}
	}
	if len(absent) > 0 {
		shown := listed
		if len(shown) > 12 {
			shown = append(slices.Clone(shown[:12]), "…")
		}
		return fail("the endpoint does not serve "+strings.Join(absent, ", "),
			"set SELFCODE_LLM_MODEL (or SELFCODE_LLM_MODEL_PLANNER, _EDITOR, _FIXER, _REPORTER) to models it serves: "+strings.Join(shown, ", "))
	}
	return ok("%s", strings.Join(used, ", "))
}

func (d *Doctor) checkModelCall(ctx context.Context) Result {
	if d.checkModelEndpoint(ctx).Status != OK {
		return skip(CheckModelEndpoint)
	}
	c, _ := d.client()
	model := d.cfg.ModelFor(string(chat.RoleEditor))
	start := time.Now()
	resp, err := c.Chat(ctx, chat.Request{Role: chat.RoleEditor, MaxTokens: 16, Messages: []chat.Message{
		{Role: chat.User, Content: "This is a connectivity check. Reply with the single word OK."},
	}})
	if err != nil {
		return fail(model+": "+err.Error(), d.modelFix(err))
	}
	took := time.Since(start).Round(10 * time.Millisecond)
	answer := strings.TrimSpace(resp.Message.Content)
	if len(answer) > 40 {
		answer = answer[:40] + "…"
	}
	return ok("%s answered %q in %s (%d tokens)", model, answer, took, resp.Usage.Total)
}
