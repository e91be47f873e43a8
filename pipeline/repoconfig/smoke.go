package repoconfig

import (
	"fmt"
	"maps"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Smoke is the smoke stage of .selfcode.yml: after the verify commands,
// build the repository's own image and probe a throwaway ("shadow")
// container of it — its health endpoint and a few requests.
type Smoke struct {
	// Dockerfile is the Dockerfile's path relative to the repository root
	// (default "Dockerfile"); the build context is the repository root.
	Dockerfile string `yaml:"dockerfile" json:"dockerfile"`
	// Port is the port the service listens on inside the container.
	Port int `yaml:"port" json:"port"`
	// Env holds plain, non-secret variables for the container: their values
	// are text in the repository.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Health is what "the service is up" means.
	Health SmokeHealth `yaml:"health" json:"health"`
	// Requests are probed in order once the service is healthy.
	Requests []SmokeRequest `yaml:"requests" json:"requests,omitempty"`
	// ReadOnly runs the container with a read-only root file system (a
	// tmpfs /tmp is writable); default true. Set false for images that
	// must write elsewhere.
	ReadOnly bool `yaml:"read_only" json:"read_only"`
	// Timeout bounds the whole stage: build, start, health and requests.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// SmokeHealth is the health check of the shadow container.
type SmokeHealth struct {
	Path   string `yaml:"path" json:"path"`
	Status int    `yaml:"status" json:"status"`
	// Timeout is how long the service has to answer Status on Path.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// SmokeRequest is one request to the healthy service and what it must
// answer.
type SmokeRequest struct {
	Method string `yaml:"method" json:"method"`
	Path   string `yaml:"path" json:"path"`
	Status int    `yaml:"status" json:"status"`
	// BodyContains, when set, must occur in the response body.
	BodyContains string `yaml:"body_contains" json:"body_contains,omitempty"`
}

// Smoke defaults.
const (
	DefaultDockerfile    = "Dockerfile"
	DefaultSmokeTimeout  = 5 * time.Minute
	DefaultHealthTimeout = time.Minute
	DefaultHealthPath    = "/"
)

// smokeMethods are the request methods a probe may use.
var smokeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// DefaultSmoke is a smoke stage with every optional key at its default;
// Port is left for the file to give.
func DefaultSmoke() *Smoke {
	return &Smoke{
		Dockerfile: DefaultDockerfile,
		Health:     SmokeHealth{Path: DefaultHealthPath, Status: http.StatusOK, Timeout: DefaultHealthTimeout},
		ReadOnly:   true,
		Timeout:    DefaultSmokeTimeout,
	}
}

// Step names of the smoke stage: each becomes a row of the verification
// table and is compared with the base like a command.
const (
	SmokeBuildStep  = "smoke: image build"
	SmokeStartStep  = "smoke: container start"
	SmokeHealthStep = "smoke: health"
)

// RequestStep names the step of request i (its method and path; a repeat
// gets its number).
func (s *Smoke) RequestStep(i int) string {
	r := s.Requests[i]
	name := "smoke: " + r.Method + " " + r.Path
	n := 1
	for _, o := range s.Requests[:i] {
		if o.Method == r.Method && o.Path == r.Path {
			n++
		}
	}
	if n > 1 {
		name += fmt.Sprintf(" (%d)", n)
	}
	return name
}

// hash writes what decides the stage's outcome.
func (s *Smoke) hash(str func(string), num func(int64)) {
	str("smoke")
	str(s.Dockerfile)
	num(int64(s.Port))
	keys := slices.Sorted(maps.Keys(s.Env))
	num(int64(len(keys)))
	for _, k := range keys {
		str(k)
		str(s.Env[k])
	}
	str(s.Health.Path)
	num(int64(s.Health.Status))
	num(int64(s.Health.Timeout))
	num(int64(len(s.Requests)))
	for _, r := range s.Requests {
		str(r.Method)
		str(r.Path)
		num(int64(r.Status))
		str(r.BodyContains)
	}
	if s.ReadOnly {
		num(1)
	} else {
		num(0)
	}
	num(int64(s.Timeout))
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxProbePath bounds a probed path.
const maxProbePath = 2048

func (p *parser) smoke(key string, v *yaml.Node) *Smoke {
	s := DefaultSmoke()
	known := []string{"dockerfile", "port", "env", "health", "requests", "read_only", "timeout"}
	portSeen := false
	var healthTimeout, timeout *yaml.Node
	p.fields(key, v, known, func(f, fk string, fv *yaml.Node) {
		switch f {
		case "dockerfile":
			if str, ok := p.str(fk, fv); ok {
				if msg := checkRelFile(str); msg != "" {
					p.fail(fk, fv, "%s", msg)
				} else {
					s.Dockerfile = path.Clean(str)
				}
			}
		case "port":
			portSeen = true
			if n, ok := p.integer(fk, fv, 1); ok {
				if n > 65535 {
					p.fail(fk, fv, "must be a port number from 1 to 65535, got %d", n)
				} else {
					s.Port = n
				}
			}
		case "env":
			s.Env = p.env(fk, fv)
		case "health":
			healthTimeout = p.health(fk, fv, &s.Health)
		case "requests":
			s.Requests = p.requests(fk, fv)
		case "read_only":
			if b, ok := p.boolean(fk, fv); ok {
				s.ReadOnly = b
			}
		case "timeout":
			if d, ok := p.duration(fk, fv); ok {
				s.Timeout, timeout = d, fv
			}
		}
	})
	if v.Kind != yaml.MappingNode {
		return nil
	}
	if !portSeen {
		p.fail(key, v, "needs the port the service listens on inside the container (port: 8080)")
	}
	if s.Health.Timeout >= s.Timeout && (healthTimeout != nil || timeout != nil) {
		fk, at := join(key, "timeout"), timeout
		if healthTimeout != nil {
			fk, at = join(key, "health.timeout"), healthTimeout
		}
		p.fail(fk, at, "the health timeout (%s) must be shorter than the whole stage's timeout (%s)", s.Health.Timeout, s.Timeout)
	}
	return s
}

// health decodes smoke.health into h and returns the node of its timeout.
func (p *parser) health(key string, v *yaml.Node, h *SmokeHealth) *yaml.Node {
	var timeout *yaml.Node
	known := []string{"path", "status", "timeout"}
	p.fields(key, v, known, func(f, fk string, fv *yaml.Node) {
		switch f {
		case "path":
			if s, ok := p.probePath(fk, fv); ok {
				h.Path = s
			}
		case "status":
			if n, ok := p.status(fk, fv); ok {
				h.Status = n
			}
		case "timeout":
			if d, ok := p.duration(fk, fv); ok {
				h.Timeout, timeout = d, fv
			}
		}
	})
	return timeout
}

func (p *parser) requests(key string, v *yaml.Node) []SmokeRequest {
	if v.Kind != yaml.SequenceNode {
		p.fail(key, v, "must be a list of {method, path, status, body_contains}, got %s", describe(v))
		return nil
	}
	known := []string{"method", "path", "status", "body_contains"}
	out := []SmokeRequest{}
	for i, item := range v.Content {
		item = resolve(item)
		ik := fmt.Sprintf("%s[%d]", key, i)
		r := SmokeRequest{Method: http.MethodGet, Status: http.StatusOK}
		pathSeen := false
		p.fields(ik, item, known, func(f, fk string, fv *yaml.Node) {
			switch f {
			case "method":
				if s, ok := p.str(fk, fv); ok {
					if m := strings.ToUpper(s); slices.Contains(smokeMethods, m) {
						r.Method = m
					} else {
						p.fail(fk, fv, "must be one of %s, got %q", strings.Join(smokeMethods, ", "), s)
					}
				}
			case "path":
				pathSeen = true
				if s, ok := p.probePath(fk, fv); ok {
					r.Path = s
				}
			case "status":
				if n, ok := p.status(fk, fv); ok {
					r.Status = n
				}
			case "body_contains":
				if s, ok := p.str(fk, fv); ok {
					r.BodyContains = s
				}
			}
		})
		if item.Kind == yaml.MappingNode && !pathSeen {
			p.fail(ik, item, "needs a path")
		}
		if r.Path != "" {
			out = append(out, r)
		}
	}
	return out
}

// env decodes a mapping of variable names to plain scalar values.
func (p *parser) env(key string, v *yaml.Node) map[string]string {
	out := map[string]string{}
	p.entries(key, v, func(name string, k, fv *yaml.Node) {
		fk := join(key, name)
		if !envNamePattern.MatchString(name) {
			p.fail(fk, k, "is not a variable name (letters, digits and _, not starting with a digit)")
			return
		}
		switch {
		case isNull(fv):
			out[name] = ""
		case fv.Kind != yaml.ScalarNode:
			p.fail(fk, fv, "must be a plain value, got %s", describe(fv))
		case strings.ContainsRune(fv.Value, 0):
			p.fail(fk, fv, "must not hold a NUL byte")
		default:
			out[name] = fv.Value
		}
	})
	return out
}

// probePath decodes an absolute request path (with an optional query).
func (p *parser) probePath(key string, v *yaml.Node) (string, bool) {
	s, ok := p.str(key, v)
	if !ok {
		return "", false
	}
	switch {
	case !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//"):
		p.fail(key, v, "must be a path on the service starting with a single /, got %q", s)
	case len(s) > maxProbePath:
		p.fail(key, v, "is %d bytes; at most %d are allowed", len(s), maxProbePath)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '#' }):
		p.fail(key, v, "must not contain spaces, control characters or #, got %q", s)
	default:
		return s, true
	}
	return "", false
}

// status decodes an HTTP status code.
func (p *parser) status(key string, v *yaml.Node) (int, bool) {
	n, ok := p.integer(key, v, 0)
	if ok && (n < 100 || n > 599) {
		p.fail(key, v, "must be an HTTP status from 100 to 599, got %d", n)
		return 0, false
	}
	return n, ok
}

// checkRelFile says what is wrong with a file path relative to the
// repository root, or "" when it is usable.
func checkRelFile(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "must not be empty"
	case strings.HasPrefix(s, "/"):
		return fmt.Sprintf("%q must be relative to the repository root (no leading /)", s)
	case strings.Contains(s, `\`) || strings.ContainsRune(s, 0):
		return fmt.Sprintf("%q must use / as separator", s)
	case path.Clean(s) == ".":
		return fmt.Sprintf("%q must name a file", s)
	}
	for _, part := range strings.Split(s, "/") {
		if part == ".." {
			return fmt.Sprintf("%q must not contain ..", s)
		}
	}
	return ""
}
