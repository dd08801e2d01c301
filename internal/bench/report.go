package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Result is one measurement: one shape on one backend.
type Result struct {
	// Backend is a name from Backends().
	Backend string `json:"backend"`
	// Shape is a name from Shapes().
	Shape string `json:"shape"`
	// Events is the number of read events (bytes read through the pipe).
	Events int64 `json:"events"`
	// Seconds is the wall-clock (monotonic) time of the run, setup excluded.
	Seconds float64 `json:"seconds"`
	// EventsPerSec is Events / Seconds.
	EventsPerSec float64 `json:"events_per_sec"`
	// Spurious counts handler calls that found nothing to do: an idle fd event called, or a
	// read or write of one byte that did not transfer it. Always 0 for Netpoller.
	Spurious int64 `json:"spurious"`
	// SignalsRaised is the number of signals the context shape's read handler sent to its own
	// process (SIGUSR1 and SIGALRM, two per read event); 0 for the other shapes.
	SignalsRaised int64 `json:"signals_raised"`
	// SignalsCounted is the sum of the counts the context shape's signal handlers received.
	// It is at most SignalsRaised: os/signal (like the kernel) merges pending signals, and
	// signals still pending when the timer ends the run are not counted.
	SignalsCounted int64 `json:"signals_counted"`
	// RatioToEpoll is EventsPerSec divided by the epoll backend's EventsPerSec in the same
	// shape and run; 0 (and omitted from JSON) when there is no epoll result for the shape.
	RatioToEpoll float64 `json:"ratio_to_epoll,omitempty"`
}

// SetRatios sets RatioToEpoll of every result whose shape has an epoll result in rs (with a
// non-zero rate), and clears it for the others.
func SetRatios(rs []Result) {
	base := map[string]float64{}
	for _, r := range rs {
		if r.Backend == RatioBase && r.EventsPerSec > 0 {
			base[r.Shape] = r.EventsPerSec
		}
	}
	for i := range rs {
		rs[i].RatioToEpoll = 0
		if b, ok := base[rs[i].Shape]; ok {
			rs[i].RatioToEpoll = rs[i].EventsPerSec / b
		}
	}
}

// WriteTable prints rs as a table, one row per result in the order given, with the columns
// shape, backend, events, seconds, events/sec and ratio to epoll ("-" when there is no epoll
// result for the shape), right-aligned; then one note line per result with signals (the context
// shape: raised vs counted) or with spurious handler calls.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "shape\tbackend\tevents\tseconds\tevents/sec\tratio to epoll\t\n")
	for _, r := range rs {
		ratio := "-"
		if r.RatioToEpoll > 0 {
			ratio = strconv.FormatFloat(r.RatioToEpoll, 'f', 2, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.0f\t%s\t\n",
			r.Shape, r.Backend, r.Events, r.Seconds, r.EventsPerSec, ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.SignalsRaised > 0 || r.SignalsCounted > 0 {
			if _, err := fmt.Fprintf(w, "%s %s: signals raised %d, counted %d\n",
				r.Shape, r.Backend, r.SignalsRaised, r.SignalsCounted); err != nil {
				return err
			}
		}
		if r.Spurious > 0 {
			if _, err := fmt.Fprintf(w, "%s %s: %d spurious handler calls\n",
				r.Shape, r.Backend, r.Spurious); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteJSON prints rs as an indented JSON array of Result objects, followed by a newline.
func WriteJSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}
