package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"

	"github.com/selfcode/selfcode/app/pricing"

	// Embedded zone data, so SELFCODE_TIMEZONE works in minimal containers.
	_ "time/tzdata"
)

// Rules named by a field's check tag:
//
//	positive     integer or duration greater than zero
//	nonnegative  integer or duration zero or greater
//	nonempty     string must not be empty
//	addr         host:port listen address
//	url          absolute http or https URL (empty allowed)
//	word         non-empty, without whitespace
//	cron         standard 5-field cron expression or @descriptor
//	timezone     name time.LoadLocation accepts
//	loglevel     a log/slog level name
//	envlist      NAME=value pairs separated by semicolons (ParseEnvList)
//	prices       MODEL=INPUT,CACHED_INPUT,OUTPUT entries separated by semicolons (pricing.Parse)

func checkNumber(checks []string, n int64, shown string) error {
	for _, c := range checks {
		switch c {
		case "positive":
			if n <= 0 {
				return fmt.Errorf("must be greater than zero, got %s", shown)
			}
		case "nonnegative":
			if n < 0 {
				return fmt.Errorf("must not be negative, got %s", shown)
			}
		}
	}
	return nil
}

// checkFloat applies positive and nonnegative to a number.
func checkFloat(checks []string, n float64) error {
	for _, c := range checks {
		switch {
		case c == "positive" && n <= 0:
			return fmt.Errorf("must be greater than zero, got %v", n)
		case c == "nonnegative" && n < 0:
			return fmt.Errorf("must not be negative, got %v", n)
		}
	}
	return nil
}

func checkString(checks []string, s string) error {
	for _, c := range checks {
		var err error
		switch c {
		case "nonempty":
			if strings.TrimSpace(s) == "" {
				err = errors.New("must not be empty")
			}
		case "addr":
			err = checkAddr(s)
		case "url":
			err = checkURL(s)
		case "word":
			err = checkWord(s)
		case "cron":
			_, err = parseSchedule(s)
		case "timezone":
			_, err = loadLocation(s)
		case "loglevel":
			_, err = parseLevel(s)
		case "envlist":
			_, err = ParseEnvList(s)
		case "prices":
			_, err = pricing.Parse(s)
		case "slugs":
			_, err = ParseSlugs(s)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func checkAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("not a host:port address: %q", s)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("bad port in address %q", s)
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not an absolute http or https URL: %q", s)
	}
	return nil
}

func checkWord(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return fmt.Errorf("must not contain whitespace: %q", s)
	}
	return nil
}

// parseSchedule parses a standard cron expression. A CRON_TZ= or TZ= prefix
// is refused: the zone is SELFCODE_TIMEZONE's job.
func parseSchedule(s string) (cron.Schedule, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "TZ=") || strings.HasPrefix(t, "CRON_TZ=") {
		return nil, fmt.Errorf("cron expression %q must not name a zone; set timezone instead", s)
	}
	sched, err := cron.ParseStandard(t)
	if err != nil {
		return nil, fmt.Errorf("not a cron expression (minute hour day-of-month month day-of-week): %q: %w", s, err)
	}
	return sched, nil
}

func loadLocation(s string) (*time.Location, error) {
	if s == "" {
		return nil, errors.New("must not be empty (use UTC)")
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", s)
	}
	return loc, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("not a log level (debug, info, warn, error): %q", s)
	}
	return l, nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseEnvList reads "NAME=value;NAME2=value2" (SELFCODE_SANDBOX_ENV):
// semicolons, because values such as GOPROXY hold commas; blank entries
// are ignored. The sandbox refuses names that look like
// secrets when it starts.
func ParseEnvList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || !envNamePattern.MatchString(name) {
			return nil, fmt.Errorf("%q is not NAME=value", strings.TrimSpace(part))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s is set twice", name)
		}
		out[name] = strings.TrimSpace(value)
	}
	return out, nil
}

// slugRE is a GitHub App's slug: lower-case letters, digits and dashes.
var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,99}$`)

// ParseSlugs reads a comma-separated list of GitHub App slugs (spaces
// around the commas allowed; empty: none, an empty list that is not nil).
func ParseSlugs(s string) ([]string, error) {
	out := []string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("empty entry in the app list %q", s)
		}
		if !slugRE.MatchString(part) {
			return nil, fmt.Errorf("%q is not a GitHub App slug (lower-case letters, digits and dashes, e.g. github-actions)", part)
		}
		out = append(out, part)
	}
	return out, nil
}
