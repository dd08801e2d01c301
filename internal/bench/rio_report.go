//go:build linux

package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Statistics a grid cell can show (--stat), all of total latency.
var rioStats = []string{"mean", "p50", "p90", "p99", "p99.9", "max"}

// RioStats returns the statistic names WriteRioGrid and WriteRioPNG accept.
func RioStats() []string { return slices.Clone(rioStats) }

// stat returns the named statistic of l in µs.
func (l RioLatency) stat(name string) (float64, bool) {
	switch name {
	case "mean":
		return l.MeanUs, true
	case "p50":
		return l.P50Us, true
	case "p90":
		return l.P90Us, true
	case "p99":
		return l.P99Us, true
	case "p99.9":
		return l.P999Us, true
	case "max":
		return l.MaxUs, true
	}
	return 0, false
}

// modeName is a result's submission mode as the tables print it.
func (r RioResult) modeName() string {
	switch r.Mode {
	case ModeSQPoll:
		return "SQPOLL"
	case ModeDeputy:
		return fmt.Sprintf("SQPOLL+deputy(%d)", r.Deputy)
	}
	return "no SQPOLL"
}

// describe is the one-line description of a run's job.
func (r RioResult) describe() string { return r.describeJob(true) }

// describeJob is describe, with or without the rate (a grid varies it).
func (r RioResult) describeJob(withRate bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Op)
	if r.Op == OpRead {
		fmt.Fprintf(&b, " %s", formatBytes(int64(r.BS)))
		if r.Direct {
			b.WriteString(" O_DIRECT")
		} else {
			b.WriteString(" page cache")
		}
	}
	fmt.Fprintf(&b, ", iodepth %d, rate ", r.IODepth)
	switch {
	case !withRate:
		fmt.Fprintf(&b, "%s", r.RateProcess)
	case r.RateIOPS > 0:
		fmt.Fprintf(&b, "%d IOPS %s", r.RateIOPS, r.RateProcess)
	default:
		b.WriteString("unlimited")
	}
	if r.HiPri {
		b.WriteString(", hipri (IOPOLL)")
	}
	return b.String()
}

// cpuPercent is the process's and the SQ thread's CPU time as a percentage
// of one core over the run (sq < 0 without an SQ thread).
func (r RioResult) cpuPercent() (proc, sq float64) {
	if r.Seconds <= 0 {
		return 0, -1
	}
	proc = 100 * (r.CPU.UserS + r.CPU.SysS) / r.Seconds
	sq = -1
	if r.CPU.SQThreadS >= 0 {
		sq = 100 * r.CPU.SQThreadS / r.Seconds
	}
	return proc, sq
}

// WriteRioTable prints each result as a block: the job, mode, IOPS and
// bandwidth; a latency table (µs: mean, p50, p90, p99, p99.9, max) for
// submission, completion and total; CPU time of the process and of the SQ
// thread; how many submits found the SQ thread asleep.
func WriteRioTable(w io.Writer, rs []RioResult) error {
	for i, r := range rs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		mode := r.modeName()
		if r.Mode != ModeNoSQPoll {
			mode += fmt.Sprintf(", SQ idle %d ms", r.SQIdleMs)
			if r.SQIdleMs == 0 {
				mode += " (kernel default, 1 s)"
			}
			if r.SQCPU >= 0 {
				mode += fmt.Sprintf(", SQ thread on CPU %d", r.SQCPU)
			}
		}
		if r.CPUPin >= 0 {
			mode += fmt.Sprintf(", submitter on CPU %d", r.CPUPin)
		}
		fmt.Fprintf(w, "rio: %s; %s; setup flags %#x\n", r.describe(), mode, r.SetupFlags)
		if r.File != "" {
			fmt.Fprintf(w, "file %s\n", r.File)
		}
		fmt.Fprintf(w, "%d I/Os in %.3f s: %.1f IOPS", r.IOs, r.Seconds, r.IOPS)
		if r.Op == OpRead {
			fmt.Fprintf(w, ", %.2f MiB/s", r.MiBPerSec)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "latency (µs)\tmean\tp50\tp90\tp99\tp99.9\tmax\t\n")
		for _, row := range []struct {
			name string
			l    RioLatency
		}{{"submission", r.Submission}, {"completion", r.Completion}, {"total", r.Total}} {
			l := row.l
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", row.name,
				l.MeanUs, l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.MaxUs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		proc, sq := r.cpuPercent()
		fmt.Fprintf(w, "CPU: process %.3f s user + %.3f s sys = %.1f%% of one core", r.CPU.UserS, r.CPU.SysS, proc)
		if sq >= 0 {
			fmt.Fprintf(w, " (SQ thread included: %.3f s = %.1f%%)", r.CPU.SQThreadS, sq)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "submits: %d", r.SubmitCalls)
		if r.Mode != ModeNoSQPoll {
			fmt.Fprintf(w, ", %d found the SQ thread asleep", r.SubmitsAsleep)
		}
		if r.Mode == ModeDeputy {
			fmt.Fprintf(w, ", %d SQEs submitted by the deputy", r.DeputySQEs)
		}
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	return nil
}

// WriteRioJSON prints rs as an indented JSON array.
func WriteRioJSON(w io.Writer, rs []RioResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if rs == nil {
		rs = []RioResult{}
	}
	return enc.Encode(rs)
}

// gridCell is where a result goes in the grid table.
type gridCell struct {
	rate int
	idle int64 // ms
}

// gridLayout returns the columns (rate × idle, in run order) and the rows
// (modes, in run order) of grid results, and the result of each cell. A run
// without SQPOLL fills every idle column of its rate.
func gridLayout(rs []RioResult) (cols []gridCell, rows []string, cell map[string]map[gridCell]RioResult) {
	cell = map[string]map[gridCell]RioResult{}
	var idles []int64
	var rates []int
	for _, r := range rs {
		if !slices.Contains(rates, r.RateIOPS) {
			rates = append(rates, r.RateIOPS)
		}
		if r.Mode != ModeNoSQPoll && !slices.Contains(idles, r.SQIdleMs) {
			idles = append(idles, r.SQIdleMs)
		}
		if !slices.Contains(rows, r.modeName()) {
			rows = append(rows, r.modeName())
		}
	}
	if len(idles) == 0 {
		idles = []int64{0}
	}
	for _, rate := range rates {
		for _, idle := range idles {
			cols = append(cols, gridCell{rate, idle})
		}
	}
	for _, r := range rs {
		m := cell[r.modeName()]
		if m == nil {
			m = map[gridCell]RioResult{}
			cell[r.modeName()] = m
		}
		if r.Mode == ModeNoSQPoll {
			for _, idle := range idles {
				m[gridCell{r.RateIOPS, idle}] = r
			}
		} else {
			m[gridCell{r.RateIOPS, r.SQIdleMs}] = r
		}
	}
	return cols, rows, cell
}

func (c gridCell) String() string {
	rate := "max"
	if c.rate > 0 {
		rate = fmt.Sprint(c.rate)
	}
	return fmt.Sprintf("%s×%dms", rate, c.idle)
}

// WriteRioGrid prints the seed's table for grid results: one table per
// statistic in stats (names from RioStats) of total latency in µs, rows =
// submission mode, columns = rate (IOPS) × SQ idle (ms); then a CPU table
// (process % of one core / SQ thread %) and the achieved IOPS. The run
// without SQPOLL does not depend on the idle time: its one run per rate fills
// all idle columns.
func WriteRioGrid(w io.Writer, rs []RioResult, stats []string) error {
	if len(rs) == 0 {
		return nil
	}
	cols, rows, cell := gridLayout(rs)
	table := func(title string, f func(RioResult) string) error {
		fmt.Fprintf(w, "%s\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "mode \\ rate×idle\t")
		for _, c := range cols {
			fmt.Fprintf(tw, "%s\t", c)
		}
		fmt.Fprint(tw, "\n")
		for _, row := range rows {
			fmt.Fprintf(tw, "%s\t", row)
			for _, c := range cols {
				if r, ok := cell[row][c]; ok {
					fmt.Fprintf(tw, "%s\t", f(r))
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
			fmt.Fprint(tw, "\n")
		}
		return tw.Flush()
	}
	head := rs[0]
	fmt.Fprintf(w, "rio grid: %s; %.0f s per run\n", head.describeJob(false), head.Seconds)
	for _, st := range stats {
		if _, ok := (RioLatency{}).stat(st); !ok {
			return fmt.Errorf("unknown statistic %q (known: %s)", st, strings.Join(rioStats, ", "))
		}
		err := table(fmt.Sprintf("\n%s total latency (µs)", st), func(r RioResult) string {
			v, _ := r.Total.stat(st)
			return fmt.Sprintf("%.1f", v)
		})
		if err != nil {
			return err
		}
	}
	err := table("\nCPU, % of one core: process (SQ thread included) / SQ thread", func(r RioResult) string {
		proc, sq := r.cpuPercent()
		if sq < 0 {
			return fmt.Sprintf("%.1f/-", proc)
		}
		return fmt.Sprintf("%.1f/%.1f", proc, sq)
	})
	if err != nil {
		return err
	}
	return table("\nIOPS achieved (submits that found the SQ thread asleep, %)", func(r RioResult) string {
		if r.Mode == ModeNoSQPoll || r.SubmitCalls == 0 {
			return fmt.Sprintf("%.0f", r.IOPS)
		}
		return fmt.Sprintf("%.0f (%.0f%%)", r.IOPS, 100*float64(r.SubmitsAsleep)/float64(r.SubmitCalls))
	})
}
