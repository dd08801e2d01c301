//go:build linux

package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// `ringev bench net` runs ../shared/anchors/net.sh (the network peers, with ringev's servers added
// to its rounds) and reads its lines; this file turns them into the table, JSON and chart.

// NetSample is one line of net.sh: one server under one workload in one round.
type NetSample struct {
	Server   string
	Workload string  // "PING_INLINE-c50-P1", "plaintext-c256-depth16", ...
	Rate     float64 // requests/s, as the client reports it
	P50Ms    float64 // the client's median latency, ms
	P99Ms    float64 // the 99th percentile, ms; 0 when not reported (redis-benchmark -q; wrk's occasional 0.00us)
	CPUUs    float64 // the server's CPU time (user+sys) per request, µs
	Errors   string  // what wrk reported as errors (non-2xx responses, socket errors); "" for none
}

// netLine matches net.sh's output lines:
//
//	NAME WORKLOAD: Got N requests/sec (p50 X ms, server CPU Z us/request)
//	NAME WORKLOAD: Got N requests/sec (p50 X, p99 Y, server CPU Z us/request)[ ERRORS: ...]
var netLine = regexp.MustCompile(`^(\S+) (\S+): Got ([0-9.]+) requests/sec \(p50 ([0-9.]+(?:[a-z]+)?)(?: ms)?(?:, p99 ([0-9.]+[a-z]+))?, server CPU ([0-9.]+) us/request\)(?: ERRORS: (.*))?$`)

// ParseNetLine parses one line of net.sh's output; false for a line that is not a measurement.
// wrk's latencies ("812.00us", "1.20ms", "2.01s") are converted to ms.
func ParseNetLine(line string) (NetSample, bool) {
	m := netLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return NetSample{}, false
	}
	s := NetSample{Server: m[1], Workload: m[2], Errors: strings.TrimSpace(m[7])}
	var ok1, ok2, ok3, ok4 bool
	s.Rate, ok1 = parseFloat(m[3])
	s.P50Ms, ok2 = parseLatency(m[4])
	s.P99Ms, ok3 = parseLatency(m[5])
	s.CPUUs, ok4 = parseFloat(m[6])
	if s.P99Ms < s.P50Ms { // wrk sometimes prints 0.00us for a percentile: not reported
		s.P99Ms = 0
	}
	return s, ok1 && ok2 && ok3 && ok4
}

func parseFloat(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// parseLatency parses a latency in ms: a bare number (redis-benchmark's, in ms) or wrk's with its
// unit (us, ms, s, m); "" is 0.
func parseLatency(s string) (float64, bool) {
	if s == "" {
		return 0, true
	}
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' })
	if i < 0 {
		return parseFloat(s)
	}
	v, ok := parseFloat(s[:i])
	scale := map[string]float64{"us": 1e-3, "ms": 1, "s": 1e3, "m": 60e3}[s[i:]]
	return v * scale, ok && scale > 0
}

// NetResult is one server under one workload: the medians of its rounds.
type NetResult struct {
	Server   string `json:"server"`
	Workload string `json:"workload"`
	// Rounds is the number of rounds measured.
	Rounds int `json:"rounds"`
	// RequestsPerSec, P50Ms, P99Ms (0: not reported) and CPUUsPerRequest are the medians of the
	// rounds' NetSample fields.
	RequestsPerSec  float64 `json:"requests_per_sec"`
	P50Ms           float64 `json:"p50_ms"`
	P99Ms           float64 `json:"p99_ms,omitempty"`
	CPUUsPerRequest float64 `json:"cpu_us_per_request"`
	// RoundsCPU is the CPU µs per request of each round, in round order; 0 for a round without
	// it (a client run whose line had no figures). SummarizeNet tells the rounds apart by the
	// order of the samples: a server and workload measured again starts the next round.
	RoundsCPU []float64 `json:"cpu_us_per_request_rounds,omitempty"`
	// ServerCPUPercent is the share of one core the server used: RequestsPerSec ×
	// CPUUsPerRequest / 10^4.
	ServerCPUPercent float64 `json:"server_cpu_percent"`
	// ClientBound: the server used less than ClientBoundPercent of a core, so the client (or the
	// path between), not the server, set the rate; CPUUsPerRequest still holds.
	ClientBound bool `json:"client_bound"`
	// SyscallsPerRequest is the server's syscalls per request counted by strace -c -f in a run
	// of its own (--syscalls); 0 (omitted) when not measured. Syscalls lists the most frequent,
	// per request.
	SyscallsPerRequest float64            `json:"syscalls_per_request,omitempty"`
	Syscalls           map[string]float64 `json:"syscalls,omitempty"`
	// Errors are the errors the client reported in any round ("" for none).
	Errors string `json:"errors,omitempty"`
	// CPUResolutionUs is how far one round's CPU µs per request may be off from the counting
	// alone, µs (0: not known; SetCPUResolution sets it): net.sh adds the server's utime and
	// stime from /proc/PID/stat, each cut down to whole clock ticks (1/UserHZ s), before and
	// after the client's run, so the difference is off by up to two ticks, spread over the
	// run's requests; and it prints the figure to 0.01 µs, off by up to 0.005 more. The median of
	// the rounds is no finer.
	CPUResolutionUs float64 `json:"cpu_us_per_request_resolution,omitempty"`
}

// UserHZ is the clock tick of the CPU times in /proc/PID/stat, ticks per second: USER_HZ, 100 on
// every Linux architecture ringev runs on (net.sh reads it with getconf CLK_TCK).
const UserHZ = 100

// netTicksOff is how many clock ticks a difference of net.sh's utime+stime sums may be off:
// utime and stime are each cut down to whole ticks, before and after.
const netTicksOff = 2

// netPrintHalfStep is half the step of net.sh's printed CPU figure ("%.2f us/request"), µs.
const netPrintHalfStep = 0.005

// SetCPUResolution sets each result's CPUResolutionUs for a run of net.sh with requests per
// redis-benchmark test (REDIS_N) and seconds per wrk run: a redis-benchmark workload spreads
// two ticks over requests, a wrk workload ("plaintext-...") over RequestsPerSec × seconds. It
// leaves CPUResolutionUs as it was where there are no requests to spread them over (requests or
// seconds ≤ 0, or a wrk workload without a rate).
func SetCPUResolution(rs []NetResult, requests, seconds int) {
	for i := range rs {
		n := float64(requests)
		if strings.HasPrefix(rs[i].Workload, "plaintext") {
			n = rs[i].RequestsPerSec * float64(seconds)
		}
		if n > 0 {
			rs[i].CPUResolutionUs = netTicksOff*1e6/UserHZ/n + netPrintHalfStep
		}
	}
}

// ClientBoundPercent is the share of a core below which a server is taken to have waited for its
// client: NetResult.ClientBound.
const ClientBoundPercent = 90

// NetRatio compares a ringev server with another server under the same workload.
type NetRatio struct {
	Workload string `json:"workload"`
	Server   string `json:"server"` // a ringev server (its name starts with "ringev")
	Peer     string `json:"peer"`
	// CPU is Server's CPU µs/request ÷ Peer's (below 1: ringev spends less per request).
	CPU float64 `json:"cpu_per_request_ratio"`
	// Rate is Server's requests/s ÷ Peer's.
	Rate float64 `json:"requests_per_sec_ratio"`
	// CPURounds is Server's CPU µs/request ÷ Peer's in each round where both were measured,
	// in round order: the spread says how far one round's ratio strays from CPU on this
	// machine (servers of a round run minutes apart at most, so a slow drift cancels out).
	CPURounds []float64 `json:"cpu_ratio_rounds,omitempty"`
	// CPUPaired is the median of CPURounds (0 when there are none).
	CPUPaired float64 `json:"cpu_ratio_paired_median,omitempty"`
	// CPUResolution is how far CPU (the ratio of the medians; CPURounds' ratios alike) may be
	// off from the counting alone, as a fraction of it (0.05: ±5 %): the two figures'
	// CPUResolutionUs over their values, added; 0 when either
	// resolution is not known or Server has no CPU figure. Noise comes on top; CPURounds shows it.
	CPUResolution float64 `json:"cpu_ratio_resolution,omitempty"`
}

// SummarizeNet groups samples by workload and server (both in the order they first appear) and
// takes the medians of their rounds.
func SummarizeNet(samples []NetSample) []NetResult {
	type key struct{ workload, server string }
	var order []key
	groups := map[key][]NetSample{}
	// The round of each sample: net.sh measures each server and workload once a round, in the
	// same order every round, and marks no round's start; a key seen already in this round
	// starts the next. So a run missing from a round (a failed client run whose line has no
	// figures, a server that did not start) leaves a 0 in RoundsCPU there, and the later rounds
	// still pair with the peers'.
	rounds := map[key][]int{}
	round, inRound := 0, map[key]bool{}
	for _, s := range samples {
		k := key{s.Workload, s.Server}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		if inRound[k] {
			round++
			clear(inRound)
		}
		inRound[k] = true
		groups[k] = append(groups[k], s)
		rounds[k] = append(rounds[k], round)
	}
	var workloads []string
	for _, k := range order {
		if !slices.Contains(workloads, k.workload) {
			workloads = append(workloads, k.workload)
		}
	}
	slices.SortStableFunc(order, func(a, b key) int {
		return cmp.Compare(slices.Index(workloads, a.workload), slices.Index(workloads, b.workload))
	})
	rs := make([]NetResult, 0, len(order))
	for _, k := range order {
		g := groups[k]
		med := func(f func(NetSample) float64) float64 { // over the rounds that reported it
			var v []float64
			for _, s := range g {
				if x := f(s); x != 0 {
					v = append(v, x)
				}
			}
			return median(v)
		}
		r := NetResult{Server: k.server, Workload: k.workload, Rounds: len(g),
			RequestsPerSec:  med(func(s NetSample) float64 { return s.Rate }),
			P50Ms:           med(func(s NetSample) float64 { return s.P50Ms }),
			P99Ms:           med(func(s NetSample) float64 { return s.P99Ms }),
			CPUUsPerRequest: med(func(s NetSample) float64 { return s.CPUUs }),
		}
		rk := rounds[k]
		r.RoundsCPU = make([]float64, rk[len(rk)-1]+1)
		for i, x := range g {
			r.RoundsCPU[rk[i]] = x.CPUUs
		}
		r.ServerCPUPercent = r.RequestsPerSec * r.CPUUsPerRequest / 1e4
		r.ClientBound = r.ServerCPUPercent < ClientBoundPercent
		var errs []string
		for _, s := range g {
			if s.Errors != "" && !slices.Contains(errs, s.Errors) {
				errs = append(errs, s.Errors)
			}
		}
		r.Errors = strings.Join(errs, "; ")
		rs = append(rs, r)
	}
	return rs
}

// median is the median of v (the mean of the middle two for an even count); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// IsRingev reports whether a server name is one of ringev's ("ringev-...").
func IsRingev(server string) bool { return strings.HasPrefix(server, "ringev") }

// NetRatios compares every ringev server with every other server of the same workload (the peers,
// and ringev's other servers), in the order of rs.
func NetRatios(rs []NetResult) []NetRatio {
	var out []NetRatio
	for _, r := range rs {
		if !IsRingev(r.Server) {
			continue
		}
		for _, p := range rs {
			if p.Workload != r.Workload || p.Server == r.Server || p.CPUUsPerRequest <= 0 || p.RequestsPerSec <= 0 {
				continue
			}
			q := NetRatio{Workload: r.Workload, Server: r.Server, Peer: p.Server,
				CPU: r.CPUUsPerRequest / p.CPUUsPerRequest, Rate: r.RequestsPerSec / p.RequestsPerSec}
			for k := 0; k < len(r.RoundsCPU) && k < len(p.RoundsCPU); k++ {
				if r.RoundsCPU[k] > 0 && p.RoundsCPU[k] > 0 {
					q.CPURounds = append(q.CPURounds, r.RoundsCPU[k]/p.RoundsCPU[k])
				}
			}
			q.CPUPaired = median(q.CPURounds)
			if r.CPUResolutionUs > 0 && p.CPUResolutionUs > 0 && r.CPUUsPerRequest > 0 {
				q.CPUResolution = r.CPUResolutionUs/r.CPUUsPerRequest + p.CPUResolutionUs/p.CPUUsPerRequest
			}
			out = append(out, q)
		}
	}
	return out
}

// WriteNetTable prints the results (one row per workload and server; the workload named on its
// first row), then the ratios of each ringev server to each other server of its workload, then a
// note on the client-bound rows.
func WriteNetTable(w io.Writer, rs []NetResult, ratios []NetRatio) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "workload\tserver\trounds\trequests/s\tp50 ms\tp99 ms\tCPU µs/req\tserver CPU %\tlimit\tsyscalls/req\t\n")
	last := ""
	for _, r := range rs {
		workload := ""
		if r.Workload != last {
			workload, last = r.Workload, r.Workload
		}
		limit := "server"
		if r.ClientBound {
			limit = "client"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.3f\t%s\t%.2f\t%.0f\t%s\t%s\t\n", workload, r.Server, r.Rounds,
			r.RequestsPerSec, r.P50Ms, optional(r.P99Ms, 3), r.CPUUsPerRequest, r.ServerCPUPercent, limit,
			optional(r.SyscallsPerRequest, 2))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeNetRatios(w, ratios); err != nil {
		return err
	}
	if err := writeCoarseRatios(w, ratios); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Errors != "" {
			fmt.Fprintf(w, "%s %s: the client reported errors: %s\n", r.Workload, r.Server, r.Errors)
		}
	}
	for _, r := range rs {
		if r.ClientBound {
			_, err := fmt.Fprintf(w, "\nlimit client: the server used less than %d %% of a core, so the client (pinned to its own CPU),\n"+
				"not the server, set the rate; compare those rows by CPU µs/request, not by requests/s.\n", ClientBoundPercent)
			return err
		}
	}
	return nil
}

// writeNetRatios prints the ratios as one table per protocol (RESP, HTTP): a row per workload and
// ringev server, a column per other server, each cell "CPU ratio / rate ratio".
func writeNetRatios(w io.Writer, ratios []NetRatio) error {
	if len(ratios) == 0 {
		return nil
	}
	fmt.Fprint(w, "\nringev ÷ each other server, same workload: CPU µs/request ratio / requests/s ratio (of the medians)\n"+
		"[the lowest–highest CPU ratio of a single round, where there are 2 rounds or more: this machine's noise]\n"+
		"(below 1 / above 1: ringev spends less CPU per request / serves more requests per second)\n")
	for _, http := range []bool{false, true} {
		type row struct{ workload, server string }
		var rows []row
		var peers []string
		cell := map[row]map[string]NetRatio{}
		for _, q := range ratios {
			if strings.HasPrefix(q.Workload, "plaintext") != http {
				continue
			}
			k := row{q.Workload, q.Server}
			if cell[k] == nil {
				rows, cell[k] = append(rows, k), map[string]NetRatio{}
			}
			cell[k][q.Peer] = q
			if !slices.Contains(peers, q.Peer) {
				peers = append(peers, q.Peer)
			}
		}
		if len(rows) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "workload\tserver\t")
		for _, p := range peers {
			fmt.Fprintf(tw, "vs %s\t", p)
		}
		fmt.Fprint(tw, "\n")
		for _, k := range rows {
			fmt.Fprintf(tw, "%s\t%s\t", k.workload, k.server)
			for _, p := range peers {
				if q, ok := cell[k][p]; ok && len(q.CPURounds) > 1 {
					fmt.Fprintf(tw, "%.2f / %.2f [%.2f–%.2f]\t", q.CPU, q.Rate, slices.Min(q.CPURounds), slices.Max(q.CPURounds))
				} else if ok {
					fmt.Fprintf(tw, "%.2f / %.2f\t", q.CPU, q.Rate)
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
			fmt.Fprint(tw, "\n")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// CoarseResolution is the CPUResolution from which WriteNetTable names a workload's ratios as
// coarse: 0.03, ±3 %.
const CoarseResolution = 0.03

// writeCoarseRatios names the workloads where some CPU ratio's resolution is CoarseResolution or
// more, with the range of their ratios' resolutions, in the order the ratios come.
func writeCoarseRatios(w io.Writer, ratios []NetRatio) error {
	var workloads []string
	lo, hi := map[string]float64{}, map[string]float64{}
	for _, q := range ratios {
		if q.CPUResolution <= 0 {
			continue
		}
		if _, ok := lo[q.Workload]; !ok {
			workloads = append(workloads, q.Workload)
			lo[q.Workload], hi[q.Workload] = q.CPUResolution, q.CPUResolution
		}
		lo[q.Workload] = min(lo[q.Workload], q.CPUResolution)
		hi[q.Workload] = max(hi[q.Workload], q.CPUResolution)
	}
	workloads = slices.DeleteFunc(workloads, func(wl string) bool { return hi[wl] < CoarseResolution })
	if len(workloads) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\ncoarse: the servers' CPU is counted in clock ticks (1/%d s) over each client run and printed\n"+
		"to 0.01 µs, so these workloads' CPU ratios may be off by this much from the counting alone\n"+
		"(more requests per run, --requests or --seconds, make it less):\n", UserHZ); err != nil {
		return err
	}
	for _, wl := range workloads {
		if _, err := fmt.Fprintf(w, "  %s: ±%.0f–%.0f %%\n", wl, 100*lo[wl], 100*hi[wl]); err != nil {
			return err
		}
	}
	return nil
}

// optional formats v with prec decimals, or "-" for 0 (not measured).
func optional(v float64, prec int) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// NetReport is the JSON of `ringev bench net --json`.
type NetReport struct {
	Results []NetResult `json:"results"`
	Ratios  []NetRatio  `json:"ratios"`
	// Regime is "plain", or "slowsys N" when every server ran under the anchors' slowsys N.
	Regime string `json:"regime"`
}

// WriteNetJSON prints the report as indented JSON.
func WriteNetJSON(w io.Writer, rep NetReport) error {
	if rep.Results == nil {
		rep.Results = []NetResult{}
	}
	if rep.Ratios == nil {
		rep.Ratios = []NetRatio{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// straceTotal matches the last line of strace -c's table: "100.00  0.12  1  12345  67 total"
// (the errors column may be empty).
var straceRow = regexp.MustCompile(`^\s*[0-9.]+\s+[0-9.]+\s+[0-9]+\s+([0-9]+)\s+(?:[0-9]+\s+)?(\S+)\s*$`)

// ParseStraceSummary reads strace -c's summary table: the calls of each syscall and the total.
// It returns an error when the table has no total line.
func ParseStraceSummary(text string) (calls map[string]int64, total int64, err error) {
	calls = map[string]int64{}
	found := false
	for _, line := range strings.Split(text, "\n") {
		m := straceRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		if m[2] == "total" {
			total, found = n, true
			continue
		}
		calls[m[2]] += n
	}
	if !found {
		return nil, 0, fmt.Errorf("strace -c output has no total line: %.200q", text)
	}
	return calls, total, nil
}
