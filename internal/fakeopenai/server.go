package fakeopenai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Options configure a Server.
type Options struct {
	// Script is the replies to give. A request takes the first unused step
	// whose Role is empty or equals the request's role, so steps without a
	// role play in order and steps with one answer "the next call for that
	// role" wherever it falls.
	Script []Step
	// Roles maps a request's model name to a role ("planner-model" →
	// "planner"). A model missing from the map is its own role.
	Roles map[string]string
	// Responder, when set, answers requests that no script step matches
	// (dynamic behaviour such as a model that never finishes). It may be
	// called from several goroutines at once.
	Responder func(req Request) Step
	// RejectJSONSchema makes the server behave like one without structured
	// outputs: any request whose response_format is json_schema gets a 400
	// naming response_format, and consumes no step.
	RejectJSONSchema bool
	// APIKey, when set, must arrive as "Authorization: Bearer <APIKey>";
	// other requests (chat completions and the model list) get 401.
	APIKey string
	// Logger receives one debug line per request; nil discards.
	Logger *slog.Logger
}

// Server is a running fake chat-completions endpoint on 127.0.0.1.
type Server struct {
	opts    Options
	log     *slog.Logger
	srv     *http.Server
	url     string
	closing chan struct{}
	once    sync.Once

	mu    sync.Mutex
	steps []Step
	used  []bool
	reqs  []Request
}

// maxBody bounds a request body.
const maxBody = 32 << 20

// New validates the script and starts a server on a free loopback port.
func New(opts Options) (*Server, error) {
	for i, s := range opts.Script {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("fakeopenai: script step %d: %w", i, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeopenai: listen: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:    opts,
		log:     logger,
		url:     "http://" + ln.Addr().String() + "/v1",
		closing: make(chan struct{}),
		steps:   append([]Step(nil), opts.Script...),
		used:    make([]bool, len(opts.Script)),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "fake: no route for "+r.Method+" "+r.URL.Path, "")
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("fakeopenai: serve", "err", err)
		}
	}()
	return s, nil
}

// URL is the API base URL, ending in /v1.
func (s *Server) URL() string { return s.url }

// Close stops the server: delayed replies end at once, and Close returns
// when every handler has.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if e := s.srv.Shutdown(ctx); e != nil {
			err = errors.Join(fmt.Errorf("fakeopenai: shutdown: %w", e), s.srv.Close())
		}
	})
	return err
}

// Enqueue appends steps to the script.
func (s *Server) Enqueue(steps ...Step) error {
	for i, st := range steps {
		if err := st.Validate(); err != nil {
			return fmt.Errorf("fakeopenai: enqueued step %d: %w", i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
	s.used = append(s.used, make([]bool, len(steps))...)
	return nil
}

// Remaining is the number of script steps not yet served.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.used {
		if !u {
			n++
		}
	}
	return n
}

// Requests returns every chat-completions request received, in order.
// The returned values must not be modified.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// RequestsFor returns the requests that named the given model.
func (s *Server) RequestsFor(model string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Body.Model == model {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) roleOf(model string) string {
	if r, ok := s.opts.Roles[model]; ok {
		return r
	}
	return model
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "fake: read body: "+err.Error(), "")
		return
	}
	if len(raw) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "fake: request body too large", "")
		return
	}
	var body ChatRequest
	decodeErr := json.Unmarshal(raw, &body)

	header := r.Header.Clone()
	hasAuth := header.Get("Authorization") != ""
	header.Del("Authorization")

	s.mu.Lock()
	req := Request{
		Seq:     len(s.reqs) + 1,
		Role:    s.roleOf(body.Model),
		Body:    body,
		Raw:     json.RawMessage(raw),
		Header:  header,
		HasAuth: hasAuth,
	}
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	log := s.log.With("seq", req.Seq, "model", body.Model, "role", req.Role)
	switch {
	case s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey:
		log.Debug("fakeopenai: unauthorised")
		writeError(w, http.StatusUnauthorized, "fake: missing or wrong API key", "")
		return
	case decodeErr != nil:
		log.Debug("fakeopenai: bad body", "err", decodeErr)
		writeError(w, http.StatusBadRequest, "fake: request body is not a chat completion request: "+decodeErr.Error(), "")
		return
	case body.Stream:
		writeError(w, http.StatusBadRequest, "fake: streaming is not supported", "stream")
		return
	case s.opts.RejectJSONSchema && body.ResponseFormat != nil && body.ResponseFormat.Type == "json_schema":
		log.Debug("fakeopenai: json_schema rejected")
		writeError(w, http.StatusBadRequest, "fake: response_format of type json_schema is not supported by this server", "response_format")
		return
	}

	step, ok := s.take(req.Role)
	if !ok && s.opts.Responder != nil {
		step, ok = s.opts.Responder(req), true
		if err := step.Validate(); err != nil {
			writeError(w, http.StatusInternalServerError, "fake: responder gave an invalid step: "+err.Error(), "")
			return
		}
	}
	if !ok {
		log.Debug("fakeopenai: script exhausted")
		writeError(w, http.StatusInternalServerError,
			fmt.Sprintf("fake: script exhausted (request %d, role %q)", req.Seq, req.Role), "")
		return
	}

	if step.Delay > 0 {
		t := time.NewTimer(time.Duration(step.Delay))
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			log.Debug("fakeopenai: client gave up during delay")
			return
		case <-s.closing:
			t.Stop()
			return
		}
	}
	log.Debug("fakeopenai: reply", "status", step.Status, "raw", step.RawBody != "", "tool_calls", len(step.ToolCalls))
	s.serve(w, req, step)
}

// take marks and returns the first unused step for role.
func (s *Server) take(role string) (Step, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range s.steps {
		if s.used[i] || (st.Role != "" && st.Role != role) {
			continue
		}
		s.used[i] = true
		return st, true
	}
	return Step{}, false
}

func (s *Server) serve(w http.ResponseWriter, req Request, step Step) {
	if step.RetryAfter != "" {
		w.Header().Set("Retry-After", step.RetryAfter)
	}
	status := step.Status
	if status == 0 {
		status = http.StatusOK
	}
	if step.RawBody != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, step.RawBody)
		return
	}
	if status != http.StatusOK {
		msg := step.Message
		if msg == "" {
			msg = "fake: " + http.StatusText(status)
		}
		writeError(w, status, msg, "")
		return
	}
	writeJSON(w, http.StatusOK, reply(req, step))
}

// reply builds the completion body for a well-formed step.
func reply(req Request, step Step) completion {
	msg := replyMessage{Role: "assistant"}
	if step.Content != "" || len(step.ToolCalls) == 0 {
		c := step.Content
		msg.Content = &c
	}
	outLen := len(step.Content)
	for i, tc := range step.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", req.Seq, i)
		}
		args := tc.Arguments
		if args == "" {
			args = "{}"
		}
		outLen += len(tc.Name) + len(args)
		msg.ToolCalls = append(msg.ToolCalls, WireToolCall{
			ID: id, Type: "function", Function: WireFunction{Name: tc.Name, Arguments: args},
		})
	}
	finish := step.FinishReason
	if finish == "" {
		finish = "stop"
		if len(step.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	prompt := step.PromptTokens
	if prompt == 0 {
		prompt = estimateTokens(len(req.Raw))
	}
	completionTokens := step.CompletionTokens
	if completionTokens == 0 {
		completionTokens = estimateTokens(outLen)
	}
	u := usage{PromptTokens: prompt, CompletionTokens: completionTokens, TotalTokens: prompt + completionTokens}
	if step.CachedTokens > 0 {
		u.PromptTokensDetails = &promptTokensDetails{CachedTokens: step.CachedTokens}
	}
	return completion{
		ID:      fmt.Sprintf("chatcmpl-fake-%d", req.Seq),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Body.Model,
		Choices: []choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   u,
	}
}

// estimateTokens is the rough "4 bytes a token" rule, at least 1.
func estimateTokens(n int) int {
	return max(1, (n+3)/4)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		writeError(w, http.StatusUnauthorized, "fake: missing or wrong API key", "")
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	names := make([]string, 0, len(s.opts.Roles))
	for m := range s.opts.Roles {
		names = append(names, m)
	}
	sort.Strings(names)
	if len(names) == 0 {
		names = []string{"fake-model"}
	}
	data := make([]model, 0, len(names))
	for _, n := range names {
		data = append(data, model{ID: n, Object: "model", OwnedBy: "fakeopenai"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg, param string) {
	body := apiErrorBody{Message: msg, Type: errorType(status)}
	if param != "" {
		body.Param = &param
	}
	if status == http.StatusTooManyRequests {
		code := "rate_limit_exceeded"
		body.Code = &code
	}
	writeJSON(w, status, apiError{Error: body})
}

func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}
