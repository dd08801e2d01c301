package bench

import (
	"io"

	"github.com/schollz/progressbar/v3"
)

// countBar is a progress line over a number of runs: runs done of all and the one running.
// Its methods do nothing without a writer.
type countBar struct{ bar *progressbar.ProgressBar }

// newCountBar draws a progress line of n runs on w; nil w draws nothing.
func newCountBar(w io.Writer, n int) countBar {
	if w == nil || n == 0 {
		return countBar{}
	}
	return countBar{progressbar.NewOptions(n,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)}
}

// describe names the run that starts now.
func (b countBar) describe(s string) {
	if b.bar != nil {
		b.bar.Describe(s)
	}
}

// add counts a run done.
func (b countBar) add() {
	if b.bar != nil {
		_ = b.bar.Add(1)
	}
}

// end clears the line.
func (b countBar) end() {
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}
