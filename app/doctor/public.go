package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// checkPublicURL checks that the address GitHub delivers to reaches this
// machine's public listener. When SELFCODE_ADDR is free (serve is not
// running), the check listens there itself with a random token and asks
// the public URL for it: only a request that came back to this machine
// can answer it. When serve holds the address, /healthz must answer as
// selfcode does.
func (d *Doctor) checkPublicURL(ctx context.Context) Result {
	base, source, hook := d.publicURL(ctx)
	if base == "" {
		return warn("unknown: SELFCODE_PUBLIC_URL is not set and the App names no webhook URL",
			"set SELFCODE_PUBLIC_URL to the address GitHub reaches this server at, e.g. https://selfcode.example.com")
	}
	fixRoute := fmt.Sprintf("GitHub delivers webhooks to %s/webhook: make that address reach SELFCODE_ADDR (%s) on this machine (DNS, firewall, the reverse proxy or tunnel in front of it)", base, d.cfg.Addr)
	healthz := base + "/healthz"
	ln, err := net.Listen("tcp", d.cfg.Addr)
	if err == nil {
		token := make([]byte, 16)
		_, _ = rand.Read(token)
		want := "selfcode-doctor " + hex.EncodeToString(token)
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, want)
		})}
		go srv.Serve(ln)
		defer srv.Close()
		status, body, err := d.get(ctx, healthz)
		switch {
		case err != nil:
			return fail(fmt.Sprintf("%s (%s) is not reachable from here: %v", base, source, err), fixRoute)
		case body != want:
			return fail(fmt.Sprintf("%s (%s) answers (HTTP %d), but not from SELFCODE_ADDR %s on this machine", base, source, status, d.cfg.Addr), fixRoute)
		}
		return d.hookAgrees(base, hook, ok("%s (%s) reaches SELFCODE_ADDR %s on this machine", base, source, d.cfg.Addr))
	}
	// The address is taken: a running serve, or something else.
	status, body, err := d.get(ctx, healthz)
	if err != nil {
		return fail(fmt.Sprintf("%s (%s) is not reachable from here: %v", base, source, err), fixRoute)
	}
	var h struct {
		Status string `json:"status"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil || h.Status != "ok" {
		return fail(fmt.Sprintf("%s answers HTTP %d %q, not as selfcode's /healthz does", healthz, status, trim(body, 60)), fixRoute)
	}
	return d.hookAgrees(base, hook, ok("%s (%s) reaches a running selfcode (SELFCODE_ADDR %s is in use)", base, source, d.cfg.Addr))
}

// publicURL is the public base URL: SELFCODE_PUBLIC_URL, else the App's
// webhook URL without its /webhook; hook is the App's webhook URL when
// it could be read.
func (d *Doctor) publicURL(ctx context.Context) (base, source, hook string) {
	if d.cfg.HasAppCredentials() {
		if f, err := d.github(); err == nil {
			hook, _, _ = f.WebhookURL(ctx)
		}
	}
	if d.cfg.PublicURL != "" {
		return strings.TrimSuffix(d.cfg.PublicURL, "/"), "SELFCODE_PUBLIC_URL", hook
	}
	if hook != "" {
		return strings.TrimSuffix(strings.TrimSuffix(hook, "/"), "/webhook"), "the App's webhook URL", hook
	}
	return "", "", ""
}

// hookAgrees turns r into a warning when the App delivers somewhere else
// than base/webhook.
func (d *Doctor) hookAgrees(base, hook string, r Result) Result {
	if hook == "" || strings.TrimSuffix(hook, "/") == base+"/webhook" {
		return r
	}
	return warn(r.Detail+"; but the App delivers webhooks to "+hook,
		"set the App's webhook URL (its settings page, General) to "+base+"/webhook, or SELFCODE_PUBLIC_URL to where it points")
}

func (d *Doctor) get(ctx context.Context, u string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := d.o.HTTPClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
