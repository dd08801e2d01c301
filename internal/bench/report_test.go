package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func sampleResults() []Result {
	rs := []Result{
		{Backend: "epoll", Shape: ShapeContext, Events: 140000, Seconds: 2, EventsPerSec: 70000, SignalsRaised: 280000, SignalsCounted: 1234},
		{Backend: "uring", Shape: ShapeFdSpeed1, Events: 1000, Seconds: 0.002, EventsPerSec: 500000},
		{Backend: "epoll", Shape: ShapeFdSpeed1, Events: 1000, Seconds: 0.004, EventsPerSec: 250000},
		{Backend: Netpoller, Shape: ShapeFdSpeed1, Events: 1000, Seconds: 0.005, EventsPerSec: 200000},
		{Backend: "poll", Shape: ShapeFdSpeed2, Events: 1000, Seconds: 0.005, EventsPerSec: 200000, Spurious: 3},
	}
	SetRatios(rs)
	return rs
}

// TestSetRatios: each result is divided by epoll's rate in its own shape; shapes without an
// epoll result get no ratio.
func TestSetRatios(t *testing.T) {
	rs := sampleResults()
	want := []float64{1, 2, 1, 0.8, 0}
	for i, r := range rs {
		if r.RatioToEpoll != want[i] {
			t.Errorf("%s/%s: ratio %v, want %v", r.Shape, r.Backend, r.RatioToEpoll, want[i])
		}
	}
}

// TestWriteTable: a header and one aligned row per result, "-" where there is no ratio, and
// notes for signals and spurious calls.
func TestWriteTable(t *testing.T) {
	var b strings.Builder
	if err := WriteTable(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 1+5+2 {
		t.Fatalf("got %d lines, want a header, 5 rows and 2 notes:\n%s", len(lines), b.String())
	}
	header := strings.Fields(lines[0])
	if strings.Join(header, " ") != "shape backend events seconds events/sec ratio to epoll" {
		t.Errorf("header %q", lines[0])
	}
	for _, l := range lines[1:6] {
		if len(l) != len(lines[0]) {
			t.Errorf("row %q is not as wide as the header %q", l, lines[0])
		}
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "fd_speed1 uring 1000 0.002 500000 2.00" {
		t.Errorf("row %q", lines[2])
	}
	if !strings.HasSuffix(strings.TrimSpace(lines[5]), " -") {
		t.Errorf("row without an epoll result %q does not end in -", lines[5])
	}
	if lines[6] != "context epoll: signals raised 280000, counted 1234" {
		t.Errorf("signal note %q", lines[6])
	}
	if lines[7] != "fd_speed2 poll: 3 spurious handler calls" {
		t.Errorf("spurious note %q", lines[7])
	}
}

// TestWriteJSON: an array of objects with exactly the documented keys; ratio_to_epoll only
// where there is an epoll result.
func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	if err := WriteJSON(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, b.String())
	}
	if len(got) != 5 {
		t.Fatalf("%d objects, want 5", len(got))
	}
	keys := []string{"backend", "events", "events_per_sec", "ratio_to_epoll", "seconds", "shape",
		"signals_counted", "signals_raised", "spurious"}
	for i, o := range got {
		var k []string
		for key := range o {
			k = append(k, key)
		}
		slices.Sort(k)
		want := keys
		if i == 4 { // fd_speed2 has no epoll result
			want = slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return s == "ratio_to_epoll" })
		}
		if !slices.Equal(k, want) {
			t.Errorf("object %d keys %v, want %v", i, k, want)
		}
	}
	if got[0]["shape"] != ShapeContext || got[0]["backend"] != "epoll" || got[0]["signals_raised"] != 280000.0 ||
		got[1]["events_per_sec"] != 500000.0 || got[1]["ratio_to_epoll"] != 2.0 {
		t.Errorf("values do not round-trip: %v", got[:2])
	}
	var empty strings.Builder
	if err := WriteJSON(&empty, nil); err != nil || strings.TrimSpace(empty.String()) != "[]" {
		t.Errorf("no results: %q, %v; want []", empty.String(), err)
	}
}
