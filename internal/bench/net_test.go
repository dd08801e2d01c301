//go:build linux

package bench

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"strings"
	"testing"
)

// netShOutput is net.sh's output for two rounds (lines of a real run, the second round edited),
// with a line that is not a measurement and a failed wrk run (no figures).
const netShOutput = `redis PING_INLINE-c50-P1: Got 43763.68 requests/sec (p50 0.303 ms, server CPU 7.50 us/request)
ringev-uring-readiness PING_INLINE-c50-P1: Got 91743.12 requests/sec (p50 0.279 ms, server CPU 8.00 us/request)
nginx-1worker plaintext-c256-depth1: Got 123936.82 requests/sec (p50 1.05ms, p99 4.40ms, server CPU 7.05 us/request)
nginx-1worker plaintext-c256-depth16: Got 149907.35 requests/sec (p50 15.53ms, p99 0.00us, server CPU 6.52 us/request)
ringev-uring-readiness plaintext-c256-depth1: Got 104580.86 requests/sec (p50 812.00us, p99 1.20s, server CPU 7.69 us/request) ERRORS:   Non-2xx or 3xx responses: 12
some other line
redis PING_INLINE-c50-P1: Got 93000.00 requests/sec (p50 0.279 ms, server CPU 9.50 us/request)
ringev-uring-readiness PING_INLINE-c50-P1: Got 95000.00 requests/sec (p50 0.271 ms, server CPU 8.50 us/request)
redis PING_INLINE-c50-P1: Got 90000.00 requests/sec (p50 0.287 ms, server CPU 8.50 us/request)
nethttp-gomaxprocs1 plaintext-c256-depth1: Got  requests/sec (p50 , p99 , server CPU 0.00 us/request)
`

func parseNetSh(t *testing.T) []NetSample {
	var samples []NetSample
	for _, line := range strings.Split(netShOutput, "\n") {
		if s, ok := ParseNetLine(line); ok {
			samples = append(samples, s)
		}
	}
	if len(samples) != 8 {
		t.Fatalf("%d samples, want 8: %+v", len(samples), samples)
	}
	return samples
}

// parseLines parses net.sh lines, every one a measurement.
func parseLines(t *testing.T, text string) []NetSample {
	t.Helper()
	var samples []NetSample
	for _, line := range strings.Split(text, "\n") {
		s, ok := ParseNetLine(line)
		if !ok {
			t.Fatalf("not a measurement: %q", line)
		}
		samples = append(samples, s)
	}
	return samples
}

// TestParseNetLine: both line formats, wrk's latency units, its errors, and its 0.00us
// percentile (not reported).
func TestParseNetLine(t *testing.T) {
	s := parseNetSh(t)
	if s[0] != (NetSample{Server: "redis", Workload: "PING_INLINE-c50-P1", Rate: 43763.68, P50Ms: 0.303, CPUUs: 7.5}) {
		t.Errorf("redis line: %+v", s[0])
	}
	if s[3].P99Ms != 0 || s[3].P50Ms != 15.53 {
		t.Errorf("p99 0.00us: %+v", s[3])
	}
	want := NetSample{Server: "ringev-uring-readiness", Workload: "plaintext-c256-depth1", Rate: 104580.86, P50Ms: 0.812, P99Ms: 1200,
		CPUUs: 7.69, Errors: "Non-2xx or 3xx responses: 12"}
	if s[4] != want {
		t.Errorf("wrk line with errors:\n got %+v\nwant %+v", s[4], want)
	}
}

// TestSummarizeNetTakesMedians: rounds of a server and workload become their medians, workloads
// in the order of first appearance; the share of a core and the client-bound flag follow.
func TestSummarizeNetTakesMedians(t *testing.T) {
	rs := SummarizeNet(parseNetSh(t))
	if len(rs) != 5 {
		t.Fatalf("%d results: %+v", len(rs), rs)
	}
	redis := rs[0]
	if redis.Server != "redis" || redis.Rounds != 3 || redis.RequestsPerSec != 90000 || redis.CPUUsPerRequest != 8.5 || redis.P50Ms != 0.287 {
		t.Errorf("redis: %+v", redis)
	}
	if math.Abs(redis.ServerCPUPercent-76.5) > 1e-9 || !redis.ClientBound {
		t.Errorf("redis: %.2f %% of a core, client bound %v; want 76.5, true", redis.ServerCPUPercent, redis.ClientBound)
	}
	ringev := rs[1]
	if ringev.Server != "ringev-uring-readiness" || ringev.Rounds != 2 || ringev.CPUUsPerRequest != 8.25 || !ringev.ClientBound {
		t.Errorf("ringev: %+v (%.0f %% of a core)", ringev, ringev.ServerCPUPercent)
	}
	if rs[4].ClientBound || rs[4].ServerCPUPercent < 90 {
		t.Errorf("nginx at depth 16 used %.0f %% of a core: not client bound", rs[4].ServerCPUPercent)
	}
	if rs[2].Workload != "plaintext-c256-depth1" || rs[3].Workload != "plaintext-c256-depth1" || rs[4].Workload != "plaintext-c256-depth16" {
		t.Errorf("order: %s %s %s", rs[2].Workload, rs[3].Workload, rs[4].Workload)
	}
}

// TestNetRatiosCompareRingevWithEachPeer: each ringev server against each other server of its
// workload, CPU and rate.
func TestNetRatiosCompareRingevWithEachPeer(t *testing.T) {
	q := NetRatios(SummarizeNet(parseNetSh(t)))
	if len(q) != 2 {
		t.Fatalf("%+v", q)
	}
	if q[0].Peer != "redis" || math.Abs(q[0].CPU-8.25/8.5) > 1e-9 || math.Abs(q[0].Rate-(91743.12+95000)/2/90000) > 1e-9 {
		t.Errorf("vs redis: %+v", q[0])
	}
	if q[1].Peer != "nginx-1worker" || q[1].Workload != "plaintext-c256-depth1" {
		t.Errorf("vs nginx: %+v", q[1])
	}
}

// TestNetRatiosPairRounds: each round's CPU ratio pairs the k-th sample of each server (redis's
// third round has no ringev sample to pair), and their median is CPUPaired.
func TestNetRatiosPairRounds(t *testing.T) {
	q := NetRatios(SummarizeNet(parseNetSh(t)))[0]
	want := []float64{8.00 / 7.50, 8.50 / 9.50}
	if len(q.CPURounds) != 2 || math.Abs(q.CPURounds[0]-want[0]) > 1e-9 || math.Abs(q.CPURounds[1]-want[1]) > 1e-9 {
		t.Fatalf("CPURounds %v, want %v", q.CPURounds, want)
	}
	if math.Abs(q.CPUPaired-(want[0]+want[1])/2) > 1e-9 {
		t.Errorf("CPUPaired %v, want the median of %v", q.CPUPaired, want)
	}
}

// TestNetRatiosPairTheRoundsAroundOneAServerMissed: a server with no measurement in round 2 (its
// client run failed, or it did not start) has a 0 there, and its third round pairs with the
// peer's third.
func TestNetRatiosPairTheRoundsAroundOneAServerMissed(t *testing.T) {
	samples := parseLines(t, `redis PING_INLINE-c50-P1: Got 90000 requests/sec (p50 0.3 ms, server CPU 8.00 us/request)
ringev-uring-requests PING_INLINE-c50-P1: Got 90000 requests/sec (p50 0.3 ms, server CPU 6.00 us/request)
redis PING_INLINE-c50-P1: Got 90000 requests/sec (p50 0.3 ms, server CPU 9.00 us/request)
redis PING_INLINE-c50-P1: Got 90000 requests/sec (p50 0.3 ms, server CPU 10.00 us/request)
ringev-uring-requests PING_INLINE-c50-P1: Got 90000 requests/sec (p50 0.3 ms, server CPU 5.00 us/request)`)
	rs := SummarizeNet(samples)
	if got := rs[1].RoundsCPU; len(got) != 3 || got[0] != 6 || got[1] != 0 || got[2] != 5 {
		t.Errorf("ringev's RoundsCPU %v, want [6 0 5]", got)
	}
	q := NetRatios(rs)[0]
	want := []float64{6.0 / 8, 5.0 / 10}
	if len(q.CPURounds) != 2 || math.Abs(q.CPURounds[0]-want[0]) > 1e-9 || math.Abs(q.CPURounds[1]-want[1]) > 1e-9 {
		t.Errorf("CPURounds %v, want %v (rounds 1 and 3)", q.CPURounds, want)
	}
}

// TestWriteNetTable: the table names every server, the ratios, the client's errors and the
// client-bound note.
func TestWriteNetTable(t *testing.T) {
	rs := SummarizeNet(parseNetSh(t))
	rs[1].SyscallsPerRequest = 2.07
	var b bytes.Buffer
	if err := WriteNetTable(&b, rs, NetRatios(rs)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PING_INLINE-c50-P1", "ringev-uring-readiness", "2.07", "vs redis", "0.97 / 1.04 [0.89–1.07]",
		"vs nginx-1worker", "Non-2xx or 3xx responses: 12", "limit client", "1200.000"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestSetCPUResolutionSpreadsTwoTicksOverTheRunsRequests: a redis-benchmark workload's
// resolution is two ticks (utime and stime each cut to 1/100 s) over its requests, a wrk
// workload's two ticks over requests/s × seconds, each plus net.sh's half step of 0.005 µs.
func TestSetCPUResolutionSpreadsTwoTicksOverTheRunsRequests(t *testing.T) {
	rs := []NetResult{
		{Server: "redis", Workload: "SET-c50-P16", RequestsPerSec: 1400000, CPUUsPerRequest: 0.57},
		{Server: "gnet-1loop", Workload: "plaintext-c256-depth16", RequestsPerSec: 1000000, CPUUsPerRequest: 0.6},
		{Server: "nethttp-gomaxprocs1", Workload: "plaintext-c256-depth1", CPUResolutionUs: 7}, // no rate
	}
	SetCPUResolution(rs, 200000, 5)
	for i, want := range []float64{0.02/0.2 + 0.005, 0.02/5 + 0.005, 7} { // 2×10 ms over 200000; over 5M
		if math.Abs(rs[i].CPUResolutionUs-want) > 1e-12 {
			t.Errorf("%s %s: resolution %v µs, want %v", rs[i].Workload, rs[i].Server, rs[i].CPUResolutionUs, want)
		}
	}
}

// TestNetRatioResolutionAddsBothFiguresShares: a ratio's resolution is each figure's
// resolution over its own value, added.
func TestNetRatioResolutionAddsBothFiguresShares(t *testing.T) {
	rs := []NetResult{
		{Server: "redis", Workload: "SET-c50-P16", RequestsPerSec: 1, CPUUsPerRequest: 1.0, CPUResolutionUs: 0.05},
		{Server: "ringev-uring-requests", Workload: "SET-c50-P16", RequestsPerSec: 1, CPUUsPerRequest: 0.5, CPUResolutionUs: 0.02},
	}
	q := NetRatios(rs)
	if len(q) != 1 || q[0].Server != "ringev-uring-requests" || q[0].Peer != "redis" || q[0].Workload != "SET-c50-P16" {
		t.Fatalf("ratios %+v, want ringev-uring-requests vs redis at SET-c50-P16", q)
	}
	if want := 0.02/0.5 + 0.05/1.0; math.Abs(q[0].CPUResolution-want) > 1e-12 { // 0.09; swapped 0.12
		t.Errorf("resolution %v, want %v", q[0].CPUResolution, want)
	}
}

// TestWriteNetTableNamesCoarseWorkloads: a pipelined workload whose CPU is a few ticks per run is
// named with the lowest and highest of its ratios' resolutions; a fine one is not.
func TestWriteNetTableNamesCoarseWorkloads(t *testing.T) {
	rs := SummarizeNet(parseLines(t, `redis SET-c50-P1: Got 90000 requests/sec (p50 0.3 ms, server CPU 8.00 us/request)
ringev-uring-requests SET-c50-P1: Got 90000 requests/sec (p50 0.3 ms, server CPU 6.00 us/request)
redis SET-c50-P16: Got 1400000 requests/sec (p50 0.3 ms, server CPU 0.50 us/request)
ringev-uring-requests SET-c50-P16: Got 1400000 requests/sec (p50 0.3 ms, server CPU 0.50 us/request)
ringev-epoll-readiness SET-c50-P16: Got 1400000 requests/sec (p50 0.3 ms, server CPU 0.80 us/request)`))
	SetCPUResolution(rs, 1000000, 3) // 0.025 µs a figure: 5 % of 0.50, 3.1 % of 0.80, 0.3 % of 8.00
	var b bytes.Buffer
	if err := WriteNetTable(&b, rs, NetRatios(rs)); err != nil {
		t.Fatal(err)
	}
	// SET-c50-P16's ratios: uring requests vs redis 5+5 = 10 %; every ratio with epoll
	// readiness in it 3.1+5 = 8.1 %
	if !strings.Contains(b.String(), "coarse") || !strings.Contains(b.String(), "  SET-c50-P16: ±8–10 %") {
		t.Errorf("the table does not name SET-c50-P16 as coarse, ±8–10 %%:\n%s", b.String())
	}
	if strings.Contains(b.String(), "  SET-c50-P1:") {
		t.Errorf("the table names SET-c50-P1 (±1 %%) as coarse:\n%s", b.String())
	}
}

// TestWriteNetJSONAndPNG: the JSON report round-trips; the chart is a PNG.
func TestWriteNetJSONAndPNG(t *testing.T) {
	rs := SummarizeNet(parseNetSh(t))
	var b bytes.Buffer
	if err := WriteNetJSON(&b, NetReport{Results: rs, Ratios: NetRatios(rs), Regime: "plain"}); err != nil {
		t.Fatal(err)
	}
	var back NetReport
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Results) != 5 || len(back.Ratios) != 2 || back.Regime != "plain" {
		t.Fatalf("JSON: %v, %+v", err, back)
	}
	b.Reset()
	if err := WriteNetPNG(&b, rs, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&b); err != nil {
		t.Errorf("not a PNG: %v", err)
	}
}

// TestParseStraceSummary: strace -c's table (from `strace -c -f ls /`), with and without the
// errors column.
func TestParseStraceSummary(t *testing.T) {
	table := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 30.43    0.000112          56         2           getdents64
 25.00    0.000092           2        34        13 openat
  0.00    0.000000           0         7           read
------ ----------- ----------- --------- --------- ----------------
100.00    0.000368           2       145        19 total
`
	calls, total, err := ParseStraceSummary(table)
	if err != nil || total != 145 || calls["openat"] != 34 || calls["getdents64"] != 2 || calls["read"] != 7 || len(calls) != 3 {
		t.Errorf("%v, %d, %v", calls, total, err)
	}
	if _, _, err := ParseStraceSummary("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n"); err == nil {
		t.Error("no error for a table without its total")
	}
}
