//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ringev/ringev/server"
	"github.com/ringev/ringev/uring"
)

const usageProbe = `usage: ringev probe [--json]

Reports what this kernel's io_uring supports: the kernel release, whether
io_uring is usable (and why not: sysctl kernel.io_uring_disabled, EPERM,
ENOSYS), the IORING_FEAT_* bits, each IORING_SETUP_* flag accepted or not
(tried one at a time, with only the flags it requires), and each opcode
supported or not (IORING_REGISTER_PROBE); and whether the kernel has kernel
TLS (setsockopt TCP_ULP "tls" on a loopback connection), which ringev's TLS
does not need (its records run on the loop: TLS 1.3's are ringev's own, TLS 1.2's
crypto/tls's).

flags:
  --json   print the report as one JSON object
`

// runProbe is `ringev probe [--json]`: it returns the exit status (0, also
// when io_uring is unusable, which the report says; 2 for a bad command line).
func runProbe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ringev probe")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			err = &usageError{doubleDash(err.Error())}
		}
		return badArgs("ringev probe", usageProbe, err, stdout, stderr)
	}
	if fs.NArg() > 0 {
		msg := fmt.Sprintf("unexpected argument %q", fs.Arg(0))
		if flag := boolFlagBefore(fs, args); flag != "" {
			msg = fmt.Sprintf("unexpected argument %q after --%s: a boolean flag takes its value after '=' (--%s=%s)",
				fs.Arg(0), flag, flag, fs.Arg(0))
		}
		return badArgs("ringev probe", usageProbe, &usageError{msg}, stdout, stderr)
	}
	rep := uring.ProbeKernel()
	ktls := "yes"
	if err := server.ProbeKernelTLS(); err != nil {
		ktls = "no: " + err.Error()
	}
	var err error
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			uring.KernelReport
			KernelTLS string `json:"kernel_tls"`
		}{rep, ktls})
	} else {
		err = writeProbe(stdout, rep, ktls)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ringev probe: %v\n", err)
		return 1
	}
	return 0
}

// writeProbe prints the report, and ktls (kernel TLS: yes, or no and why), as text.
func writeProbe(w io.Writer, rep uring.KernelReport, ktls string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel            %s\n", rep.Kernel)
	fmt.Fprintf(&b, "kernel TLS        %s\n", ktls)
	disabled := "absent"
	if rep.Disabled >= 0 {
		disabled = fmt.Sprint(rep.Disabled)
	}
	fmt.Fprintf(&b, "io_uring_disabled %s\n", disabled)
	if !rep.Usable {
		fmt.Fprintf(&b, "io_uring          NOT usable: %s\n", rep.Reason)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "io_uring          usable\n")
	if rep.Reason != "" {
		fmt.Fprintf(&b, "note              %s\n", rep.Reason)
	}
	b.WriteString("\nfeatures (IORING_FEAT_*)\n")
	for _, f := range rep.Features {
		fmt.Fprintf(&b, "  %-20s %-6s %s\n", f.Name, f.Since, yesNo(f.Set))
	}
	b.WriteString("\nsetup flags (IORING_SETUP_*, each tried alone)\n")
	for _, f := range rep.Setup {
		line := fmt.Sprintf("  %-20s %-6s %s", f.Name, f.Since, yesNo(f.Set))
		if f.With != "" {
			line += "  (with " + f.With + ")"
		}
		if f.Err != "" {
			line += "  " + f.Err
		}
		b.WriteString(line + "\n")
	}
	n := 0
	for _, o := range rep.Ops {
		if o.Supported {
			n++
		}
	}
	fmt.Fprintf(&b, "\nops (IORING_OP_*, %d of %d supported, last op %d)\n", n, len(rep.Ops), rep.LastOp)
	for _, o := range rep.Ops {
		fmt.Fprintf(&b, "  %3d %-18s %-6s %s\n", o.Code, o.Name, o.Since, yesNo(o.Supported))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}
