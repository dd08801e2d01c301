//go:build linux

package server

// Tests of an engine's loops: each balancing mode spreads the connections over them, a
// connection handed from the accepting loop to another wakes it through the ring (PostTo:
// IORING_OP_MSG_RING on uring) or, forced, through Post, and each loop ticks on its own.

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoopsBalance: with two loops, 12 connections are served by both (SO_REUSEPORT), in turn
// (round-robin: 6 and 6), or by the least loaded (least-conns: 6 and 6 while they stay open),
// each on its own loop's goroutine.
func TestLoopsBalance(t *testing.T) {
	for _, mode := range []string{BalanceReusePort, BalanceRoundRobin, BalanceLeastConns} {
		t.Run(mode, func(t *testing.T) {
			eachSetup(t, func(t *testing.T, s setup) {
				r := newRecorder()
				r.line = func(c *Conn, line string) {
					if !c.Loop().EventLoop().Owned() {
						t.Error("OnData not on its connection's loop")
					}
					c.WriteString(line + "\n")
				}
				e := startEngine(t, r, append(s.opts(), WithLoops(2), WithBalance(mode))...)
				per := map[int]int{}
				for range 12 {
					c := dialEngine(t, e)
					per[r.next(t).Loop().Index()]++
					c.Write([]byte("hi\n"))
					if got := readN(t, c, 3); got != "hi\n" {
						t.Fatalf("reply %q", got)
					}
				}
				if mode == BalanceReusePort && (per[0] == 0 || per[1] == 0) {
					t.Errorf("connections per loop %v: one loop got none", per)
				}
				if mode != BalanceReusePort && (per[0] != 6 || per[1] != 6) {
					t.Errorf("connections per loop %v, want 6 and 6", per)
				}
				if n := e.Conns(); n != 12 {
					t.Errorf("Conns() = %d, want 12", n)
				}
			})
		})
	}
}

// TestLoopsLeastConnsFillsTheEmptierLoop: after the connections of one loop close, new ones go
// to it until the loops are even.
func TestLoopsLeastConnsFillsTheEmptierLoop(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		r := newRecorder()
		e := startEngine(t, r, append(s.opts(), WithLoops(2), WithBalance(BalanceLeastConns))...)
		type pair struct {
			c    interface{ Close() error }
			loop int
		}
		var ps []pair
		for range 4 {
			c := dialEngine(t, e)
			ps = append(ps, pair{c, r.next(t).Loop().Index()})
		}
		for _, p := range ps {
			if p.loop == 0 {
				p.c.Close()
				r.closedWith(t)
			}
		}
		per := map[int]int{}
		for range 2 {
			dialEngine(t, e)
			per[r.next(t).Loop().Index()]++
		}
		if per[0] != 2 {
			t.Errorf("new connections per loop %v, want both on loop 0 (it had none)", per)
		}
	})
}

// TestLoopsHandOffThroughTheRing: connections the accepting loop hands to the other loop are
// served there; the other loop is woken with PostTo (on uring, IORING_OP_MSG_RING), and with
// Post when that is forced off; both serve every connection.
func TestLoopsHandOffThroughTheRing(t *testing.T) {
	for _, viaRing := range []bool{true, false} {
		name := "msg-ring"
		if !viaRing {
			name = "post"
		}
		t.Run(name, func(t *testing.T) {
			eachSetup(t, func(t *testing.T, s setup) {
				r := newRecorder()
				opts := append(s.opts(), WithLoops(2), WithBalance(BalanceRoundRobin))
				if !viaRing {
					opts = append(opts, func(o *options) { o.noMsgRing = true })
				}
				e := startEngine(t, r, opts...)
				for i := range 8 {
					c := dialEngine(t, e)
					if got := r.next(t).Loop().Index(); got != i%2 {
						t.Fatalf("connection %d on loop %d, want %d", i, got, i%2)
					}
					c.Write([]byte("x\n"))
					readN(t, c, 2)
				}
				other := e.Loops()[1]
				ring, post := other.ringWakes.Load(), other.postWakes.Load()
				if viaRing && (ring == 0 || post != 0) {
					t.Errorf("the accepting loop woke the other %d times with PostTo and %d with Post; want PostTo only", ring, post)
				}
				if !viaRing && (ring != 0 || post == 0) {
					t.Errorf("the accepting loop woke the other %d times with PostTo and %d with Post; want Post only", ring, post)
				}
			})
		})
	}
}

// ticker counts OnTick calls per loop, each asking for the next in 5 ms, until 3.
type ticker struct {
	*recorder
	mu    sync.Mutex
	ticks map[int]int
	wrong atomic.Bool
}

func (k *ticker) OnTick(l *Loop) time.Duration {
	if !l.EventLoop().Owned() {
		k.wrong.Store(true)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ticks[l.Index()]++
	if k.ticks[l.Index()] >= 3 {
		return 0
	}
	return 5 * time.Millisecond
}

// TestLoopsTickEachLoop: OnTick runs on each loop's goroutine, again after the delay it
// returns, and no more after it returns 0.
func TestLoopsTickEachLoop(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		k := &ticker{recorder: newRecorder(), ticks: map[int]int{}}
		e := startEngine(t, k, append(s.opts(), WithLoops(2))...)
		eventually(t, "3 ticks on each loop", func() bool {
			k.mu.Lock()
			defer k.mu.Unlock()
			return k.ticks[0] == 3 && k.ticks[1] == 3
		})
		for _, l := range e.Loops() {
			onLoop(t, l, func() {
				if l.tick != nil {
					t.Errorf("loop %d has a tick timer after OnTick returned 0", l.Index())
				}
			})
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.ticks[0] != 3 || k.ticks[1] != 3 || k.wrong.Load() {
			t.Errorf("ticks %v (off the loop's goroutine: %v)", k.ticks, k.wrong.Load())
		}
	})
}
