//go:build linux

package ringev_test

// Examples of the loop: fd events on a socketpair, and a repeating timer.

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
)

// An echo server on one end of a socketpair: its Read handler reads what arrives and writes it
// back. The client writes "hello" to the other end, and the loop runs until the echo is back.
func Example() {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Println("socketpair:", err)
		return
	}
	server, client := fds[0], fds[1]
	defer unix.Close(server)
	defer unix.Close(client)

	// New locks this goroutine to its OS thread; the loop belongs to this goroutine until Close.
	loop, err := ringev.New()
	if err != nil {
		fmt.Println("ringev.New:", err)
		return
	}
	defer loop.Close()

	// The echo server: read what is there, write it back. The loop's I/O methods are read(2)
	// and write(2) for non-blocking fds; on the uring backend they may carry the loop's next
	// look at its fds through the ring.
	buf := make([]byte, 64) // handed to the kernel: one buffer for every call
	_, err = loop.AddFd(server, ringev.Read, func(ev *ringev.FdEvent, flags ringev.Flags) {
		n, err := loop.ReadNonblocking(ev.Fd(), buf)
		if err != nil || n == 0 { // EAGAIN, error or EOF: nothing to echo
			return
		}
		if _, err := loop.WriteNonblocking(ev.Fd(), buf[:n]); err != nil {
			fmt.Println("echo write:", err)
		}
	})
	if err != nil {
		fmt.Println("AddFd:", err)
		return
	}

	// The client collects the echo and stops the loop once all of it is back.
	msg := "hello"
	var echo []byte
	cbuf := make([]byte, 64)
	_, err = loop.AddFd(client, ringev.Read, func(ev *ringev.FdEvent, flags ringev.Flags) {
		n, err := loop.ReadNonblocking(ev.Fd(), cbuf)
		if err != nil || n == 0 {
			return
		}
		echo = append(echo, cbuf[:n]...)
		if len(echo) >= len(msg) {
			loop.Stop()
		}
	})
	if err != nil {
		fmt.Println("AddFd:", err)
		return
	}

	// Give up after 5 s rather than wait forever.
	giveUp := loop.AddTimer(5*time.Second, func(*ringev.Timer) {
		fmt.Println("timed out")
		loop.Stop()
	})

	if _, err := unix.Write(client, []byte(msg)); err != nil {
		fmt.Println("write:", err)
		return
	}
	if err := loop.Run(); err != nil {
		fmt.Println("Run:", err)
		return
	}
	giveUp.Stop()
	fmt.Printf("echo: %s\n", echo)
	// Output: echo: hello
}

// A repeating timer: a timer runs once, so its handler adds the next one. Here it ticks every
// 10 ms and stops the loop at the third tick; Run returns when nothing is left to wait for or
// when Stop is called.
func ExampleLoop_AddTimer_repeating() {
	loop, err := ringev.New()
	if err != nil {
		fmt.Println("ringev.New:", err)
		return
	}
	defer loop.Close()

	ticks := 0
	var tick func(*ringev.Timer)
	tick = func(*ringev.Timer) {
		ticks++
		fmt.Println("tick", ticks)
		if ticks == 3 {
			loop.Stop()
			return
		}
		loop.AddTimer(10*time.Millisecond, tick) // the next tick, 10 ms after this one ran
	}
	loop.AddTimer(10*time.Millisecond, tick)
	if err := loop.Run(); err != nil {
		fmt.Println("Run:", err)
	}
	// Output:
	// tick 1
	// tick 2
	// tick 3
}
