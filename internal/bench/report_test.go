//go:build linux

package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func sampleResults() []Result {
	rs := []Result{
		newResult("epoll", PipesModeDefault, ShapeContext, 140000, 2),
		newResult("uring", PipesModeDefault, ShapeFdSpeed1, 1000, 0.002),
		newResult("epoll", PipesModeDefault, ShapeFdSpeed1, 1000, 0.004),
		newResult(Netpoller, PipesModeDefault, ShapeFdSpeed1, 1000, 0.005),
		newResult("poll", PipesModeDefault, ShapeFdSpeed2, 1000, 0.005),
	}
	rs[0].SignalsRaised, rs[0].SignalsCounted = 280000, 1234
	rs[4].Spurious = 3
	SetRatios(rs)
	return rs
}

// TestSetRatios: each result is divided by epoll's rate in its own shape and mode ("" counting
// as the default); shapes and modes without an epoll result get no ratio.
func TestSetRatios(t *testing.T) {
	rs := append(sampleResults(),
		newResult("uring", PipesModeAll, ShapeFdSpeed1, 1000, 0.001),
		newResult("epoll", PipesModeAll, ShapeFdSpeed1, 1000, 0.002),
		newResult("uring", PipesModeFresh, ShapeFdSpeed1, 1000, 0.001),
		Result{Backend: "poll", Shape: ShapeFdSpeed1, EventsPerSec: 125000},
	)
	SetRatios(rs)
	want := []float64{1, 2, 1, 0.8, 0, 2, 1, 0, 0.5}
	for i, r := range rs {
		if r.RatioToEpoll != want[i] {
			t.Errorf("%s/%s: ratio %v, want %v", r.Shape, r.Label(), r.RatioToEpoll, want[i])
		}
	}
}

// TestSetRatiosOfCompletionRows: a completion row is divided by epoll's readiness (default mode)
// rate in its shape when there is one, else by epoll's in its own mode; RatioMode says which.
func TestSetRatiosOfCompletionRows(t *testing.T) {
	rs := []Result{
		newResult("epoll", PipesModeDefault, ShapeFdSpeed1, 1000, 0.004),
		newResult("uring", PipesModeCompletionInline, ShapeFdSpeed1, 1000, 0.001),
		newResult("epoll", PipesModeCompletionInline, ShapeFdSpeed1, 1000, 0.002),
		newResult("uring", PipesModeCompletion, FdBusyShape(16), 1000, 0.001),
		newResult("epoll", PipesModeCompletion, FdBusyShape(16), 1000, 0.002),
		newResult("uring", PipesModeAll, ShapeFdSpeed1, 1000, 0.001),
	}
	SetRatios(rs)
	want := []struct {
		ratio float64
		mode  string
	}{{1, PipesModeDefault}, {4, PipesModeDefault}, {2, PipesModeDefault}, {2, PipesModeCompletion}, {1, PipesModeCompletion}, {0, ""}}
	for i, r := range rs {
		if r.RatioToEpoll != want[i].ratio || r.RatioMode != want[i].mode {
			t.Errorf("%s %s: ratio %v to epoll in mode %q, want %v in %q", r.Shape, r.Label(), r.RatioToEpoll, r.RatioMode, want[i].ratio, want[i].mode)
		}
	}
}

// TestWriteTableSaysACompletionRowsRatioIsToReadiness: a line under the table says so when a
// completion row is divided by epoll's readiness row, and none when no row is.
func TestWriteTableSaysACompletionRowsRatioIsToReadiness(t *testing.T) {
	rs := []Result{
		newResult("epoll", PipesModeDefault, ShapeFdSpeed1, 1000, 0.004),
		newResult("uring", PipesModeCompletionInline, ShapeFdSpeed1, 1000, 0.001),
	}
	for _, tc := range []struct {
		rs   []Result
		note bool
	}{{rs, true}, {rs[:1], false}} {
		SetRatios(tc.rs)
		var b strings.Builder
		if err := WriteTable(&b, tc.rs); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), completionRatioNote); got != tc.note {
			t.Errorf("%d rows: note %v, want %v; table:\n%s", len(tc.rs), got, tc.note, b.String())
		}
	}
}

// TestWriteTableSaysWhatTheRatioIs: a line under the table says what the ratio column is
// (events/sec divided by epoll's; above 1 is faster) when a row has a ratio, and none when no
// row has.
func TestWriteTableSaysWhatTheRatioIs(t *testing.T) {
	rs := []Result{
		newResult("epoll", PipesModeDefault, ShapeFdSpeed1, 1000, 0.004),
		newResult("uring", PipesModeDefault, ShapeFdSpeed1, 1000, 0.001),
	}
	for _, tc := range []struct {
		rs   []Result
		note bool
	}{{rs, true}, {rs[1:], false}} {
		SetRatios(tc.rs)
		var b strings.Builder
		if err := WriteTable(&b, tc.rs); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "above 1 is faster than epoll"); got != tc.note {
			t.Errorf("%d rows: note %v, want %v; table:\n%s", len(tc.rs), got, tc.note, b.String())
		}
	}
}

// TestLabel: the backend alone in the default mode and for the netpoller, else backend/mode.
func TestLabel(t *testing.T) {
	for _, tc := range [][3]string{
		{"uring", PipesModeDefault, "uring"}, {"uring", "", "uring"}, {"uring", PipesModeAll, "uring/all"},
		{"epoll", PipesModeFresh, "epoll/fresh"}, {Netpoller, PipesModeDefault, Netpoller},
	} {
		if got := Label(tc[0], tc[1]); got != tc[2] {
			t.Errorf("Label(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestWriteTable: a header and one aligned row per result, "-" where there is no ratio, and
// notes for the ratio, signals and spurious calls.
func TestWriteTable(t *testing.T) {
	var b strings.Builder
	rs := append(sampleResults(), newResult("uring", PipesModeAll, FdManyShape(100), 1000, 0.001))
	rs[5].Spurious = 2
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 1+6+4 {
		t.Fatalf("got %d lines, want a header, 6 rows and 4 notes:\n%s", len(lines), b.String())
	}
	header := strings.Fields(lines[0])
	if strings.Join(header, " ") != "shape backend events seconds events/sec ns/event ratio to epoll" {
		t.Errorf("header %q", lines[0])
	}
	for _, l := range lines[1:7] {
		if len(l) != len(lines[0]) {
			t.Errorf("row %q is not as wide as the header %q", l, lines[0])
		}
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "fd_speed1 uring 1000 0.002 500000 2000 2.00" {
		t.Errorf("row %q", lines[2])
	}
	if !strings.HasSuffix(strings.TrimSpace(lines[5]), " -") {
		t.Errorf("row without an epoll result %q does not end in -", lines[5])
	}
	if f := strings.Fields(lines[6]); strings.Join(f, " ") != "fd_many100 uring/all 1000 0.001 1000000 1000 -" {
		t.Errorf("row %q", lines[6])
	}
	if lines[7]+"\n" != ratioNote {
		t.Errorf("ratio note %q", lines[7])
	}
	if lines[8] != "context epoll: signals raised 280000, counted 1234" {
		t.Errorf("signal note %q", lines[8])
	}
	if lines[9] != "fd_speed2 poll: 3 spurious handler calls" {
		t.Errorf("spurious note %q", lines[9])
	}
	if lines[10] != "fd_many100 uring/all: 2 spurious handler calls" {
		t.Errorf("spurious note %q", lines[10])
	}
}

// TestWriteTableNotesUnregisteredCompletionRuns: a completion run on uring whose pipes were not
// registered gets a note saying why (the flag, or RegisterFile's error); a registered one, and
// completion runs on other backends, get none.
func TestWriteTableNotesUnregisteredCompletionRuns(t *testing.T) {
	rs := []Result{
		newResult("uring", PipesModeCompletion, FdBusyShape(16), 1000, 0.001),
		newResult("uring", PipesModeCompletionInline, FdBusyShape(16), 1000, 0.001),
		newResult("uring", PipesModeCompletion, ShapeFdSpeed1, 1000, 0.001),
		newResult("epoll", PipesModeCompletion, FdBusyShape(16), 1000, 0.001),
	}
	rs[0].RegisteredFiles = true
	rs[2].RegisterFileError = "EINVAL"
	var b strings.Builder
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := []string{
		"fd_busy16 uring/completion-inline: pipes not in the registered-file table (--registered-files=false)",
		"fd_speed1 uring/completion: pipes not in the registered-file table (Loop.RegisterFile failed: EINVAL)",
	}
	if len(lines) != 1+len(rs)+len(want) || !slices.Equal(lines[1+len(rs):], want) {
		t.Fatalf("table:\n%s\nwant its notes to be exactly:\n%s", b.String(), strings.Join(want, "\n"))
	}
}

// TestWriteJSONRegisteredFiles: registered_files is in the JSON of a registered run, and
// register_file_error where RegisterFile failed; neither otherwise.
func TestWriteJSONRegisteredFiles(t *testing.T) {
	rs := []Result{newResult("uring", PipesModeCompletion, ShapeFdSpeed1, 1000, 0.001),
		newResult("uring", PipesModeCompletion, ShapeFdSpeed1, 1000, 0.001),
		newResult("uring", PipesModeCompletion, ShapeFdSpeed1, 1000, 0.001)}
	rs[0].RegisteredFiles = true
	rs[1].RegisterFileError = "EINVAL"
	var b strings.Builder
	if err := WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	if got[0]["registered_files"] != true || got[0]["register_file_error"] != nil ||
		got[1]["registered_files"] != nil || got[1]["register_file_error"] != "EINVAL" ||
		got[2]["registered_files"] != nil || got[2]["register_file_error"] != nil {
		t.Errorf("JSON %v", got)
	}
}

// TestWriteJSON: an array of objects with exactly the documented keys; ratio_to_epoll only
// where there is an epoll result, fds only for fd_many.
func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	rs := append(sampleResults(), newResult("uring", PipesModeAll, FdManyShape(100), 1000, 0.001))
	if err := WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, b.String())
	}
	if len(got) != 6 {
		t.Fatalf("%d objects, want 6", len(got))
	}
	keys := []string{"backend", "events", "events_per_sec", "mode", "ns_per_event", "ratio_mode", "ratio_to_epoll", "seconds",
		"shape", "signals_counted", "signals_raised", "spurious"}
	for i, o := range got {
		var k []string
		for key := range o {
			k = append(k, key)
		}
		slices.Sort(k)
		want := keys
		if i >= 4 { // fd_speed2 and fd_many100/all have no epoll result
			want = slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return s == "ratio_to_epoll" || s == "ratio_mode" })
		}
		if i == 5 {
			want = append(want, "fds")
			slices.Sort(want)
		}
		if !slices.Equal(k, want) {
			t.Errorf("object %d keys %v, want %v", i, k, want)
		}
	}
	if got[0]["shape"] != ShapeContext || got[0]["backend"] != "epoll" || got[0]["signals_raised"] != 280000.0 ||
		got[1]["events_per_sec"] != 500000.0 || got[1]["ratio_to_epoll"] != 2.0 || got[1]["ns_per_event"] != 2000.0 ||
		got[1]["mode"] != PipesModeDefault || got[5]["mode"] != PipesModeAll || got[5]["fds"] != 100.0 {
		t.Errorf("values do not round-trip: %v", got)
	}
	var empty strings.Builder
	if err := WriteJSON(&empty, nil); err != nil || strings.TrimSpace(empty.String()) != "[]" {
		t.Errorf("no results: %q, %v; want []", empty.String(), err)
	}
}
