package overnight

import "time"

// Schedule yields window starts (robfig/cron's Schedule, in the configured
// time zone, does).
type Schedule interface {
	Next(t time.Time) time.Time
}

// DefaultWindow is how long a window lasts when Windows.Length is zero.
const DefaultWindow = 6 * time.Hour

// Windows says when overnight windows start and end: a window starts at a
// time of the schedule and lasts Length (SELFCODE_OVERNIGHT_WINDOW), but
// never past the start of the next window.
type Windows struct {
	Schedule Schedule
	Length   time.Duration
}

// Next is the start of the first window after t.
func (w Windows) Next(t time.Time) time.Time { return w.Schedule.Next(t).UTC() }

// End is the end of the window that starts at start.
func (w Windows) End(start time.Time) time.Time {
	length := w.Length
	if length <= 0 {
		length = DefaultWindow
	}
	end := start.Add(length)
	if n := w.Schedule.Next(start); !n.IsZero() && n.Before(end) {
		end = n
	}
	return end.UTC()
}
