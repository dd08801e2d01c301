//go:build linux

package ringev_test

// Examples of requests: an echo server on completions, RegisterFile, and IOs.

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
)

// echoServer is a TCP echo server written with requests only. It makes one Callback per
// connection (a method value) and reuses it for every request of that connection, telling
// them apart by the token: no allocation per request.
type echoServer struct {
	loop     *ringev.Loop
	listener int
	accept   ringev.Request
}

// echoSession is one accepted connection: a buffer (the kernel's while a request holds it) and
// its callback.
type echoSession struct {
	srv *echoServer
	fd  int
	buf []byte
	cb  ringev.Callback
}

const (
	tokRecv = iota + 1
	tokSend
	tokClose
)

// onAccept runs once per accepted connection (the multishot accept goes on).
func (s *echoServer) onAccept(c *ringev.Completion) {
	if c.Err != nil {
		return // ECANCELED: the listener was closed
	}
	conn := &echoSession{srv: s, fd: c.N, buf: make([]byte, 4096)}
	conn.cb = conn.onIO
	conn.recv()
}

func (c *echoSession) recv() {
	if _, err := c.srv.loop.Recv(c.fd, c.buf, 0, c.cb, tokRecv); err != nil {
		fmt.Println("recv:", err)
	}
}

// onIO is the connection's one callback: a recv's data is sent back, a send's completion
// makes the next recv, end of file closes the connection through the loop.
func (c *echoSession) onIO(x *ringev.Completion) {
	l := c.srv.loop
	switch {
	case x.Token == tokRecv && (x.Err != nil || x.N == 0):
		l.CloseFd(c.fd, c.cb, tokClose)
	case x.Token == tokRecv:
		l.Send(c.fd, x.Buf, 0, c.cb, tokSend) // x.Buf is c.buf[:N]: the kernel's until sent
	case x.Token == tokSend && x.Err == nil:
		c.recv()
	}
}

// A TCP echo server on loopback and its client, both written with requests only: a multishot
// accept, then recv and send per connection; the client connects, sends, receives the echo
// and closes; closing the listener through the loop ends the accept.
func Example_requests() {
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Println("socket:", err)
		return
	}
	unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	unix.Listen(lfd, 16)
	addr, _ := unix.Getsockname(lfd)

	loop, err := ringev.New()
	if err != nil {
		fmt.Println("ringev.New:", err)
		return
	}
	defer loop.Close()

	srv := &echoServer{loop: loop, listener: lfd}
	srv.accept, err = loop.AcceptMultishot(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, srv.onAccept, 0)
	if err != nil {
		fmt.Println("accept:", err)
		return
	}

	// The client.
	cfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Println("socket:", err)
		return
	}
	reply := make([]byte, 64)
	var client ringev.Callback
	client = func(c *ringev.Completion) {
		if c.Err != nil {
			fmt.Println(c.Op, "failed:", c.Err)
			loop.Stop()
			return
		}
		switch c.Op {
		case ringev.OpConnect:
			loop.Send(cfd, []byte("hello, loop"), 0, client, 0)
		case ringev.OpSend:
			loop.Recv(cfd, reply, 0, client, 0)
		case ringev.OpRecv:
			fmt.Printf("echo: %s\n", c.Buf)
			loop.CloseFd(cfd, client, 0)
		case ringev.OpClose:
			if c.Fd == cfd {
				loop.CloseFd(lfd, client, 0) // ends the multishot accept (ECANCELED)
			}
		}
	}
	loop.Connect(cfd, addr, client, 0)

	// Run returns when nothing is left: every request has had its last completion.
	if err := loop.Run(); err != nil {
		fmt.Println("run:", err)
	}
	fmt.Println("accept pending:", srv.accept.Pending())
	// Output:
	// echo: hello, loop
	// accept pending: false
}

// A pipe whose two ends are in the ring's registered-file table (on uring; the other backends
// only check the fds), read and written with requests, then closed with CloseFd, which empties
// each end's slot before its close(2): a plain close(2) would leave the file open.
func ExampleLoop_RegisterFile() {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		fmt.Println("pipe:", err)
		return
	}
	r, w := p[0], p[1]
	loop, err := ringev.New()
	if err != nil {
		fmt.Println("ringev.New:", err)
		return
	}
	defer loop.Close()
	for _, fd := range p {
		if err := loop.RegisterFile(fd); err != nil {
			// A kernel before 5.19 refuses (the error names IORING_RSRC_REGISTER_SPARSE): the
			// requests on fd work as before, unregistered.
			fmt.Fprintln(os.Stderr, err)
		}
	}
	var cb ringev.Callback
	cb = func(c *ringev.Completion) {
		switch {
		case c.Err != nil:
			fmt.Println(c.Op, "failed:", c.Err)
		case c.Op == ringev.OpRead:
			fmt.Printf("read %q\n", c.Buf)
			loop.CloseFd(r, cb, 0)
			loop.CloseFd(w, cb, 0)
		case c.Op == ringev.OpClose:
			fmt.Println("closed", map[int]string{r: "the read end", w: "the write end"}[c.Fd])
		}
	}
	loop.Read(r, make([]byte, 16), -1, cb, 0)
	loop.Write(w, []byte("hello"), -1, cb, 0)
	if err := loop.Run(); err != nil { // until every request has had its completion
		fmt.Println("run:", err)
	}
	// Output:
	// read "hello"
	// closed the read end
	// closed the write end
}

// A pipe's reader and writer as IOs: each made once with its callback, then submitted again
// and again; the read's callback counts the message and submits the next write and read, and
// at the third frees the read, so that nothing is pending and Run returns.
func ExampleLoop_NewRead() {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		fmt.Println("pipe:", err)
		return
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	loop, err := ringev.New()
	if err != nil {
		fmt.Println("ringev.New:", err)
		return
	}
	defer loop.Close()

	in := make([]byte, 16)
	msgs := 0
	var rd, wr *ringev.IO
	wr, err = loop.NewWrite(p[1], []byte("ping"), -1, func(_ *ringev.IO, n int, err error) {
		if err != nil {
			fmt.Println("write:", err)
		}
	})
	if err != nil {
		fmt.Println("NewWrite:", err)
		return
	}
	rd, err = loop.NewRead(p[0], in, -1, func(x *ringev.IO, n int, err error) {
		if err != nil {
			fmt.Println("read:", err)
			return
		}
		msgs++
		fmt.Printf("read %q\n", in[:n])
		if msgs == 3 {
			x.Free() // the callback has run: the IO is not pending
			return
		}
		wr.Submit()
		x.Submit()
	})
	if err != nil {
		fmt.Println("NewRead:", err)
		return
	}
	wr.Submit()
	rd.Submit()
	if err := loop.Run(); err != nil { // until no submission is pending
		fmt.Println("run:", err)
	}
	wr.Free()
	// Output:
	// read "ping"
	// read "ping"
	// read "ping"
}
