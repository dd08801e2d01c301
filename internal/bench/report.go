//go:build linux

package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
)

// Result is one measurement: one shape on one backend.
type Result struct {
	// Backend is a name from Backends().
	Backend string `json:"backend"`
	// Mode is the loop's mode, a name from PipesModes(); always PipesModeDefault for Netpoller.
	Mode string `json:"mode"`
	// Shape is a name from Shapes(), with fd_many as fd_many<N> (fd_many1, fd_many100, ...).
	Shape string `json:"shape"`
	// Fds is N of an fd_many<N> shape: the number of watched pipes, one of them active; 0 (and
	// omitted from JSON) for the other shapes.
	Fds int `json:"fds,omitempty"`
	// Events is the number of read events (bytes read through the pipe).
	Events int64 `json:"events"`
	// Seconds is the wall-clock (monotonic) time of the run, setup excluded.
	Seconds float64 `json:"seconds"`
	// EventsPerSec is Events / Seconds.
	EventsPerSec float64 `json:"events_per_sec"`
	// NsPerEvent is Seconds / Events in nanoseconds: the cost of one read event with everything
	// around it (the write that fed it, the waits, for context the signals).
	NsPerEvent float64 `json:"ns_per_event"`
	// CPUNsPerEvent is the loop thread's CPU time (CLOCK_THREAD_CPUTIME_ID, user and system)
	// during the run divided by Events, in ns: unlike NsPerEvent it does not count time the
	// thread waited for a CPU that other processes held, so it moves less on a busy machine.
	// 0 (and omitted from JSON) for Netpoller, whose two goroutines run on two threads.
	CPUNsPerEvent float64 `json:"cpu_ns_per_event,omitempty"`
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
	// IOPath is the path the handlers' I/O took at the end of a ringev run: "ring" (through
	// the uring backend's ring with the loop's next look) or "syscall" (read(2)/write(2));
	// ringev.Loop.IOPath, or "syscall" in mode syscall. "" (and omitted from JSON) for
	// Netpoller.
	IOPath string `json:"io_path,omitempty"`
	// IOPathReason says why (ringev.Loop.IOPathReason). "" for Netpoller.
	IOPathReason string `json:"io_path_reason,omitempty"`
	// RegisteredFiles: the run's pipes were in the ring's registered-file table
	// (ringev.Loop.RegisterFile: its requests carried IOSQE_FIXED_FILE). Set in the completion
	// modes on the uring backend unless Options.UnregisteredFiles; false (and omitted from JSON)
	// otherwise, and when RegisterFile failed (RegisterFileError).
	RegisteredFiles bool `json:"registered_files,omitempty"`
	// RegisterFileError is why a completion run on uring ran with its pipes unregistered though
	// Options.UnregisteredFiles did not ask it (ringev.Loop.RegisterFile's error, e.g. from a
	// kernel before 5.19, which has no sparse file table); "" (and omitted from JSON) otherwise.
	RegisterFileError string `json:"register_file_error,omitempty"`
	// RatioToEpoll is EventsPerSec divided by the epoll backend's EventsPerSec in the same
	// shape and run, in mode RatioMode; 0 (and omitted from JSON) when there is no such epoll
	// result.
	RatioToEpoll float64 `json:"ratio_to_epoll,omitempty"`
	// RatioMode is the mode of the epoll result RatioToEpoll divides by: the result's own mode,
	// but for a completion mode the default (readiness) mode when the run has that epoll
	// result, so that a completion row says what the requests gain over epoll readiness, the
	// tevent model. "" (and omitted from JSON) when there is no ratio.
	RatioMode string `json:"ratio_mode,omitempty"`
}

// Label names a backend in a mode the way the table and the chart do: the backend alone in the
// default mode (and for "" and Netpoller), else backend/mode, for example "uring/all".
func Label(backend, mode string) string {
	if mode == "" || mode == PipesModeDefault || backend == Netpoller {
		return backend
	}
	return backend + "/" + mode
}

// Label is Label(r.Backend, r.Mode).
func (r Result) Label() string { return Label(r.Backend, r.Mode) }

// modeOf is r.Mode with "" read as the default.
func (r Result) modeOf() string {
	if r.Mode == "" {
		return PipesModeDefault
	}
	return r.Mode
}

// SetRatios sets RatioToEpoll and RatioMode of every result that has an epoll result (with a
// non-zero rate) in rs to divide by: in the same shape and mode, or for a completion mode in the
// same shape and the default (readiness) mode, when there is one; it clears them for the others.
func SetRatios(rs []Result) {
	type key struct{ shape, mode string }
	base := map[key]float64{}
	for _, r := range rs {
		if r.Backend == RatioBase && r.EventsPerSec > 0 {
			base[key{r.Shape, r.modeOf()}] = r.EventsPerSec
		}
	}
	for i := range rs {
		r := &rs[i]
		r.RatioToEpoll, r.RatioMode = 0, ""
		mode := r.modeOf()
		if _, ok := base[key{r.Shape, PipesModeDefault}]; ok && isCompletionMode(mode) {
			mode = PipesModeDefault
		}
		if b, ok := base[key{r.Shape, mode}]; ok {
			r.RatioToEpoll, r.RatioMode = r.EventsPerSec/b, mode
		}
	}
}

// ratioNote is the line under the table that says what the last column is, when a row has a
// ratio.
const ratioNote = "ratio to epoll: the row's events/sec divided by epoll's in the same shape and mode; above 1 is faster than epoll\n"

// completionRatioNote is the line after ratioNote when a completion row's ratio is to epoll's
// readiness row.
const completionRatioNote = "  but a completion row's (backend/completion...) is divided by epoll's readiness row's (default)\n"

// WriteTable prints rs as a table, one row per result in the order given, with the columns
// shape, backend (Label: "uring" in the default mode, "uring/all" in mode all), events, seconds,
// events/sec, ns/event and ratio to epoll (RatioToEpoll; "-" when there is none), right-aligned;
// then, when a row has a ratio, a line that says what it is (ratioNote: above 1 is faster); then,
// when a completion row's ratio is to epoll's readiness row, a line that says so; then one
// note line per result with signals (the context shape: raised vs counted) or with spurious
// handler calls, and one per completion run on uring whose pipes were not registered
// (RegisteredFiles false): "SHAPE LABEL: pipes not in the registered-file table (WHY)".
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "shape\tbackend\tevents\tseconds\tevents/sec\tns/event\tratio to epoll\t\n")
	for _, r := range rs {
		ratio := "-"
		if r.RatioToEpoll > 0 {
			ratio = strconv.FormatFloat(r.RatioToEpoll, 'f', 2, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.0f\t%.0f\t%s\t\n",
			r.Shape, r.Label(), r.Events, r.Seconds, r.EventsPerSec, r.NsPerEvent, ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(rs, func(r Result) bool { return r.RatioToEpoll > 0 }) {
		if _, err := fmt.Fprint(w, ratioNote); err != nil {
			return err
		}
	}
	if slices.ContainsFunc(rs, func(r Result) bool { return r.RatioMode != "" && r.RatioMode != r.modeOf() }) {
		if _, err := fmt.Fprint(w, completionRatioNote); err != nil {
			return err
		}
	}
	for _, r := range rs {
		if r.SignalsRaised > 0 || r.SignalsCounted > 0 {
			if _, err := fmt.Fprintf(w, "%s %s: signals raised %d, counted %d\n",
				r.Shape, r.Label(), r.SignalsRaised, r.SignalsCounted); err != nil {
				return err
			}
		}
		if r.Spurious > 0 {
			if _, err := fmt.Fprintf(w, "%s %s: %d spurious handler calls\n",
				r.Shape, r.Label(), r.Spurious); err != nil {
				return err
			}
		}
		if r.Backend == ringBackend && isCompletionMode(r.Mode) && !r.RegisteredFiles {
			why := "--registered-files=false"
			if r.RegisterFileError != "" {
				why = "Loop.RegisterFile failed: " + r.RegisterFileError
			}
			if _, err := fmt.Fprintf(w, "%s %s: pipes not in the registered-file table (%s)\n", r.Shape, r.Label(), why); err != nil {
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
