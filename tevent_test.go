//go:build linux

package ringev_test

// The shapes of tevent's own testsuite (lib/tevent/testsuite.c), on every backend, named after
// what they check: the timer-driven flag-switching cycle (test_event_fd1), both ends of a
// socketpair filled and drained (test_event_fd2), many handlers with different masks on one fd
// (test_event_fd3), and tevent's ERROR/hang-up rules (loop contract item 6).

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// pipeBuf is PIPE_BUF on Linux.
const pipeBuf = 4096

// TestTeventFlagSwitchingCycle (test_event_fd1): a handler watches one end of a socketpair and
// disables itself (flags 0) each time it runs; timers switch its flags between WRITE, READ,
// READ|WRITE and 0 and write to the other end, and each phase checks exactly which flags the
// handler was called with. The cycle is run three times; then the other end is closed: a
// WRITE-only handler is not called and loses WRITE, and READ|WRITE reports READ|WRITE with EOF.
func TestTeventFlagSwitchingCycle(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		s0, s1 := testutil.Socketpair(t)
		l := newLoop(t, backend)
		const quiet = 10 * time.Millisecond // how long a phase waits for extra (wrong) calls

		var ev *ringev.FdEvent
		set := func(f ringev.Flags) {
			if err := ev.SetFlags(f); err != nil {
				t.Errorf("SetFlags(%v): %v", f, err)
			}
		}
		poke := func() { testutil.Write(t, s1, []byte{'p'}) }
		type phase struct {
			name  string
			setup func()
			want  []ringev.Flags
		}
		var phases []phase
		for round := 0; round < 3; round++ {
			r := fmt.Sprintf("round %d: ", round)
			phases = append(phases,
				phase{r + "WRITE on an empty socket", func() { set(ringev.Write) }, []ringev.Flags{ringev.Write}},
				phase{r + "READ with one byte", func() { poke(); set(ringev.Read) }, []ringev.Flags{ringev.Read}},
				phase{r + "READ|WRITE with one byte", func() { poke(); set(ringev.Read | ringev.Write) }, []ringev.Flags{ringev.Read | ringev.Write}},
				phase{r + "READ|WRITE, nothing to read", func() { set(ringev.Read | ringev.Write) }, []ringev.Flags{ringev.Write}},
				phase{r + "0 with one byte pending", func() { poke(); set(0) }, nil},
				phase{r + "WRITE with a byte pending", func() { set(ringev.Write) }, []ringev.Flags{ringev.Write}},
				phase{r + "READ with a byte pending", func() { set(ringev.Read) }, []ringev.Flags{ringev.Read}},
			)
		}
		phases = append(phases,
			phase{"peer closed: WRITE only is not called", func() {
				if err := testutil.Close(t, s1); err != nil {
					t.Errorf("close: %v", err)
				}
				set(ringev.Write)
			}, nil},
			phase{"peer closed: READ|WRITE sees EOF", func() {
				if f := ev.Flags(); f != 0 {
					t.Errorf("after hang-up, the WRITE-only event still has flags %v, want 0 (WRITE cleared)", f)
				}
				set(ringev.Read | ringev.Write)
			}, []ringev.Flags{ringev.Read | ringev.Write}},
		)

		got := make([][]ringev.Flags, len(phases))
		cur, done, eof := -1, false, false
		var start func(i int)
		endPhase := func(*ringev.Timer) {
			if cur+1 < len(phases) {
				start(cur + 1)
			} else {
				done = true
			}
		}
		start = func(i int) {
			cur = i
			phases[i].setup()
			if len(phases[i].want) == 0 {
				l.AddTimer(quiet, endPhase)
			}
		}
		ev = addFd(t, l, s0, 0, func(ev *ringev.FdEvent, f ringev.Flags) {
			got[cur] = append(got[cur], f)
			if f&ringev.Read != 0 {
				var buf [64]byte
				n, err := unix.Read(ev.Fd(), buf[:])
				switch {
				case err == nil && n == 0:
					eof = true
					if err := ev.Close(); err != nil { // tevent closes the socket on EOF
						t.Errorf("FdEvent.Close on EOF: %v", err)
					}
					l.AddTimer(quiet, endPhase)
					return
				case err != nil:
					t.Errorf("%s: read: %v", phases[cur].name, err)
				}
			}
			set(0)
			if len(got[cur]) == len(phases[cur].want) {
				l.AddTimer(quiet, endPhase)
			}
		})
		l.AddTimer(quiet, func(*ringev.Timer) { start(0) })
		untilFor(t, l, 2*deadline, "the cycle", func() bool { return done })
		for i, p := range phases {
			if !slices.Equal(got[i], p.want) {
				t.Errorf("phase %q: handler called with %v, want %v", p.name, got[i], p.want)
			}
		}
		if !eof {
			t.Errorf("the final READ|WRITE call did not read EOF")
		}
	})
}

// TestTeventBothEndsFilledThenDrainedInOrder (test_event_fd2): both ends of a socketpair wait for
// READ|WRITE; on WRITE each end writes until EAGAIN, after which it is reported READ only (never
// WRITE while its peer has read nothing). Then each end reads at most PIPE_BUF bytes per call, in
// order (every byte checked); WRITE readiness returns only after the peer has read at least
// PIPE_BUF bytes, and then a PIPE_BUF write goes through whole.
func TestTeventBothEndsFilledThenDrainedInOrder(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)

		type end struct {
			name           string
			ev             *ringev.FdEvent
			written, read  int  // bytes written to / read from this end
			full           bool // a write got EAGAIN
			onlyRead       bool // after full, a call reported READ only
			writableAgain  int  // peer's read count when WRITE came back (-1: not yet)
			readSinceDrain int
		}
		ends := [2]*end{{name: "end 0", writableAgain: -1}, {name: "end 1", writableAgain: -1}}
		draining := false
		pattern := func(k int) byte { return byte(k % 251) }
		fill := func(e *end, n int) []byte {
			p := make([]byte, n)
			for i := range p {
				p[i] = pattern(e.written + i)
			}
			return p
		}
		var problems []string
		fail := func(format string, args ...any) {
			if len(problems) < 10 {
				problems = append(problems, fmt.Sprintf(format, args...))
			}
		}
		handler := func(i int) ringev.FdHandler {
			return func(ev *ringev.FdEvent, f ringev.Flags) {
				e, peer := ends[i], ends[1-i]
				if !draining {
					switch {
					case f&ringev.Write != 0 && e.full:
						fail("%s: WRITE reported after a write got EAGAIN and before the peer read anything", e.name)
					case f&ringev.Write != 0:
						for {
							n, err := unix.Write(ev.Fd(), fill(e, pipeBuf))
							if err == unix.EAGAIN {
								e.full = true
								break
							}
							if err != nil {
								fail("%s: write: %v", e.name, err)
								return
							}
							e.written += n
						}
					case f == ringev.Read && e.full:
						e.onlyRead = true
						if peer.onlyRead {
							draining = true
						}
					default:
						fail("%s: called with %v while filling (full=%v)", e.name, f, e.full)
					}
					return
				}
				if f&ringev.Read != 0 {
					buf := make([]byte, pipeBuf)
					n, err := unix.Read(ev.Fd(), buf)
					if err != nil || n == 0 {
						fail("%s: read while draining: n=%d err=%v", e.name, n, err)
						return
					}
					for k := 0; k < n; k++ {
						if buf[k] != pattern(e.read+k) {
							fail("%s: byte %d is %d, want %d: data out of order", e.name, e.read+k, buf[k], pattern(e.read+k))
							break
						}
					}
					e.read += n
					e.readSinceDrain += n
				}
				if f&ringev.Write != 0 && e.writableAgain < 0 {
					e.writableAgain = peer.readSinceDrain
					n, err := unix.Write(ev.Fd(), fill(e, pipeBuf))
					if err != nil || n != pipeBuf {
						fail("%s: the first write after WRITE came back wrote %d of %d bytes (err %v)", e.name, n, pipeBuf, err)
					}
					if n > 0 {
						e.written += n
					}
					if err := ev.SetFlags(ringev.Read); err != nil {
						fail("%s: SetFlags(READ): %v", e.name, err)
					}
				}
			}
		}
		ends[0].ev = addFd(t, l, a, ringev.Read|ringev.Write, handler(0))
		ends[1].ev = addFd(t, l, b, ringev.Read|ringev.Write, handler(1))
		finished := func() bool {
			if len(problems) > 0 {
				return true
			}
			for i, e := range ends {
				if e.writableAgain < 0 || e.read != ends[1-i].written {
					return false
				}
			}
			return true
		}
		untilFor(t, l, 2*deadline, "both ends drained", finished)
		if len(problems) > 0 {
			t.Fatalf("%s", strings.Join(problems, "\n"))
		}
		for _, e := range ends {
			if e.writableAgain < pipeBuf {
				t.Errorf("%s: WRITE came back after its peer read %d bytes, want at least PIPE_BUF (%d)", e.name, e.writableAgain, pipeBuf)
			}
			t.Logf("%s: %d bytes written in all, WRITE came back after the peer had read %d", e.name, e.written, e.writableAgain)
		}
	})
}

// TestTeventNineHandlersPerSocketFireOncePerRound (test_event_fd3): nine handlers on
// each end of a socketpair, three each with READ, WRITE and READ|WRITE. Every round writes one
// byte to each end and enables a varying subset; every enabled handler fires exactly once (it
// disables itself) with exactly its flags, no disabled one fires, and the timer that starts the
// next round, armed by the round's last handler, is what the loop runs next: it runs in the
// Once that follows that handler's (Onces are counted, not the wall clock, so that a busy
// machine cannot fail it): the disabled handlers do not keep the loop busy, and its wait ends
// at a timer armed from inside a handler.
func TestTeventNineHandlersPerSocketFireOncePerRound(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		masks := []ringev.Flags{ringev.Read, ringev.Write, ringev.Read | ringev.Write}
		const perEnd, rounds = 9, 20
		const gap = 2 * time.Millisecond

		type h struct {
			ev      *ringev.FdEvent
			mask    ringev.Flags
			enabled bool
			fired   int
		}
		var hs []*h
		round, expected, firedThisRound := -1, 0, 0
		var problems []string
		once, armedIn := 0, 0                // the Once running now (counted by untilFor's condition), and the one that armed the round's timer
		var nextRound func(tm *ringev.Timer) // the handlers and the round timer refer to each other
		for _, fd := range []int{a, b} {
			for i := 0; i < perEnd; i++ {
				x := &h{mask: masks[i%3]}
				x.ev = addFd(t, l, fd, 0, func(ev *ringev.FdEvent, f ringev.Flags) {
					x.fired++
					firedThisRound++
					switch {
					case !x.enabled:
						problems = append(problems, fmt.Sprintf("round %d: disabled handler (fd %d, %v) fired with %v", round, ev.Fd(), x.mask, f))
					case x.fired > 1:
						problems = append(problems, fmt.Sprintf("round %d: handler (fd %d, %v) fired %d times", round, ev.Fd(), x.mask, x.fired))
					case f != x.mask:
						problems = append(problems, fmt.Sprintf("round %d: handler (fd %d, %v) fired with %v", round, ev.Fd(), x.mask, f))
					}
					if err := ev.SetFlags(0); err != nil {
						t.Errorf("SetFlags(0): %v", err)
					}
					if firedThisRound == expected {
						armedIn = once
						l.AddTimer(gap, nextRound)
					}
				})
				hs = append(hs, x)
			}
		}
		nextRound = func(tm *ringev.Timer) {
			if tm != nil && once != armedIn+1 {
				problems = append(problems, fmt.Sprintf("round %d: the round's timer ran in Once %d, armed in Once %d: want the next one", round, once, armedIn))
			}
			round++
			if round == rounds {
				return
			}
			testutil.Drain(t, a)
			testutil.Drain(t, b)
			testutil.Write(t, a, []byte{'a'})
			testutil.Write(t, b, []byte{'b'})
			expected, firedThisRound = 0, 0
			for i, x := range hs {
				x.fired = 0
				x.enabled = (i+round)%4 != 0
				f := ringev.Flags(0)
				if x.enabled {
					f = x.mask
					expected++
				}
				if err := x.ev.SetFlags(f); err != nil {
					t.Errorf("SetFlags(%v): %v", f, err)
				}
			}
		}
		nextRound(nil)
		// untilFor asks the condition once before each Once: that counts them.
		untilFor(t, l, 2*deadline, "every round", func() bool { once++; return round == rounds || len(problems) > 10 })
		if len(problems) > 0 {
			t.Fatalf("%s", strings.Join(problems, "\n"))
		}
	})
}

// TestTeventHangUpWriteOnlyHandlerNotCalledAndLosesWrite: a handler waiting only for WRITE (on a
// full socket) is not called when the peer hangs up; its WRITE flag is cleared, and the loop
// neither spins nor reports it again. A READ handler on the same fd sees the hang-up as READ.
func TestTeventHangUpWriteOnlyHandlerNotCalledAndLosesWrite(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, withReader := range []bool{false, true} {
			name := "Alone"
			if withReader {
				name = "WithReadHandlerOnSameFd"
			}
			t.Run(name, func(t *testing.T) {
				a, peer := testutil.Socketpair(t)
				l := newLoop(t, backend)
				testutil.Fill(t, a)
				wev := addFd(t, l, a, ringev.Write, never(t, "WRITE-only handler on a full socket"))
				var readFlags []ringev.Flags
				if withReader {
					addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
						readFlags = append(readFlags, f)
						// The peer hung up without reading what this end wrote: read(2)
						// reports that as ECONNRESET rather than EOF.
						var buf [16]byte
						if n, err := unix.Read(ev.Fd(), buf[:]); err != unix.ECONNRESET && (n != 0 || err != nil) {
							t.Errorf("READ handler after hang-up: read n=%d err=%v, want EOF or ECONNRESET", n, err)
						}
						if err := ev.SetFlags(0); err != nil {
							t.Errorf("SetFlags(0): %v", err)
						}
					})
				}
				untilWaited(t, l)                    // the loop watches the fd
				settle(t, l, 10*time.Millisecond, 3) // full: nothing to report
				if err := testutil.Close(t, peer); err != nil {
					t.Fatalf("close peer: %v", err)
				}
				untilFor(t, l, deadline, "the hang-up's handler calls", func() bool {
					return wev.Flags()&ringev.Write == 0 && (!withReader || len(readFlags) > 0)
				})
				settle(t, l, 50*time.Millisecond, 5)
				if f := wev.Flags(); f&ringev.Write != 0 {
					t.Fatalf("after hang-up the WRITE-only event still has flags %v; WRITE must be cleared", f)
				}
				if withReader && !slices.Equal(readFlags, []ringev.Flags{ringev.Read}) {
					t.Fatalf("READ handler on the same fd was called with %v, want [READ]", readFlags)
				}
			})
		}
	})
}

// TestTeventHangUpReadHandlerSeesEOF: after the peer closes, a READ handler is called with READ
// and its read(2) returns 0 (end of file).
func TestTeventHangUpReadHandlerSeesEOF(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, peer := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var got []ringev.Flags
		var n int
		var rerr error
		addFd(t, l, a, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
			got = append(got, f)
			var buf [16]byte
			n, rerr = unix.Read(ev.Fd(), buf[:])
			ev.Close()
		})
		untilWaited(t, l) // the loop watches the fd
		settle(t, l, 10*time.Millisecond, 3)
		testutil.Close(t, peer)
		until(t, l, func() bool { return len(got) > 0 })
		if !slices.Equal(got, []ringev.Flags{ringev.Read}) || n != 0 || rerr != nil {
			t.Fatalf("READ handler after hang-up: called with %v, read n=%d err=%v; want [READ] and EOF", got, n, rerr)
		}
	})
}

// TestTeventHangUpErrorHandlerSeesError: after the peer closes, a handler waiting for ERROR is
// called with ERROR (and one waiting for READ|ERROR with READ|ERROR).
func TestTeventHangUpErrorHandlerSeesError(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, mask := range []ringev.Flags{ringev.Error, ringev.Read | ringev.Error, ringev.Write | ringev.Error} {
			t.Run(strings.ReplaceAll(mask.String(), "|", "_"), func(t *testing.T) {
				a, peer := testutil.Socketpair(t)
				l := newLoop(t, backend)
				if mask&ringev.Write != 0 {
					testutil.Fill(t, a)
				}
				var got []ringev.Flags
				addFd(t, l, a, mask, func(ev *ringev.FdEvent, f ringev.Flags) {
					got = append(got, f)
					ev.Close()
				})
				untilWaited(t, l) // the loop watches the fd
				settle(t, l, 10*time.Millisecond, 3)
				if len(got) != 0 {
					t.Fatalf("handler ran with %v before the hang-up", got)
				}
				testutil.Close(t, peer)
				until(t, l, func() bool { return len(got) > 0 })
				if len(got) != 1 || got[0]&ringev.Error == 0 || got[0]&^mask != 0 {
					t.Fatalf("%v handler after hang-up was called with %v, want one call including ERROR (within %v)", mask, got, mask)
				}
				if mask&ringev.Read != 0 && got[0]&ringev.Read == 0 {
					t.Fatalf("%v handler after hang-up was called with %v, want READ too", mask, got)
				}
			})
		}
	})
}

// TestTeventInvalidFdNeverSpins: a watched fd closed behind the loop's back (on poll, the kernel
// then reports POLLNVAL) never makes the loop spin: a bounded number of Once calls, each
// returning within the deadline, little CPU, and the handler is never called. On poll, Once
// reports the invalid fd once, with an error wrapping EBADF, and the event is disarmed.
func TestTeventInvalidFdNeverSpins(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, mask := range []ringev.Flags{ringev.Read, ringev.Write, ringev.Read | ringev.Write | ringev.Error} {
			t.Run(strings.ReplaceAll(mask.String(), "|", "_"), func(t *testing.T) {
				a, _ := testutil.Socketpair(t)
				l := newLoop(t, backend)
				if mask&ringev.Write != 0 {
					testutil.Fill(t, a)
				}
				ev := addFd(t, l, a, mask, never(t, "invalid fd"))
				untilWaited(t, l) // the loop watches the fd
				settle(t, l, 10*time.Millisecond, 3)
				testutil.Close(t, a)
				errs := settle(t, l, 80*time.Millisecond, 5)
				for _, err := range errs {
					if !errors.Is(err, unix.EBADF) {
						t.Errorf("Once after the fd was closed: %v, want nil or an error wrapping EBADF", err)
					}
				}
				if backend == "poll" {
					if len(errs) != 1 {
						t.Errorf("poll: Once reported %d errors for the invalid fd (%v), want exactly 1 (POLLNVAL, then disarmed)", len(errs), errs)
					}
					if f := ev.Flags(); f != 0 {
						t.Errorf("poll: after POLLNVAL the event still has flags %v, want 0 (disarmed)", f)
					}
				}
			})
		}
	})
}
