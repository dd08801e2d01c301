//go:build linux

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"

	"github.com/ringev/ringev/server"
)

// A RESP server on a free port, asked PING and SET/GET by a client, then shut down.
func ExampleNewRESP() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", server.NewRESP(server.NewKeyspace()), server.WithLoops(1))
	if err != nil {
		fmt.Println("Listen:", err)
		return
	}
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		fmt.Println("Dial:", err)
		return
	}
	defer c.Close()
	fmt.Fprint(c, "PING\r\nSET greeting hello\r\nGET greeting\r\n") // three pipelined commands
	r := bufio.NewReader(c)
	for range 4 { // +PONG, +OK, $5, hello
		line, _ := r.ReadString('\n')
		fmt.Printf("%q\n", line)
	}
	c.Close()
	stop() // stop accepting, finish what the connections sent, close them
	if err := e.Wait(); err != nil {
		fmt.Println("Wait:", err)
	}
	// Output:
	// "+PONG\r\n"
	// "+OK\r\n"
	// "$5\r\n"
	// "hello\r\n"
}

// upper is a handler of one's own: each line received is sent back in upper case. OnData sees
// the bytes received and not yet consumed; it consumes whole lines only, and leaves a partial
// line for the next call, when the rest of it has arrived.
type upper struct{}

func (upper) OnData(c *server.Conn) {
	for {
		in, _ := c.Peek(-1)
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			if len(in) > 1024 { // bound the input a connection may leave
				c.WriteString("line too long\n")
				c.Close()
			}
			return // an incomplete line: wait for more
		}
		line := in[:i+1]
		if string(line) == "quit\n" {
			c.WriteString("bye\n")
			c.Close() // after "bye" is sent
			return
		}
		c.Write(bytes.ToUpper(line))
		c.Discard(i + 1)
	}
}

// A handler of one's own on two loops, each on its own OS thread.
func ExampleListen() {
	ctx, stop := context.WithCancel(context.Background())
	e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", upper{}, server.WithLoops(2))
	if err != nil {
		stop()
		fmt.Println("Listen:", err)
		return
	}
	defer e.Wait()
	defer stop()
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		fmt.Println("Dial:", err)
		return
	}
	defer c.Close()
	fmt.Fprint(c, "hello\nwor")
	fmt.Fprint(c, "ld\nquit\n")
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // the server closed the connection after "bye"
		}
		fmt.Print(line)
	}
	// Output:
	// HELLO
	// WORLD
	// bye
}

// replies is a dialed connection's handler: it hands each line received to a channel.
type replies chan string

func (r replies) OnData(c *server.Conn) {
	for {
		in, _ := c.Peek(-1)
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			return
		}
		r <- string(in[:i])
		c.Discard(i + 1)
	}
}

// An outbound connection: an engine that listens on nothing dials a server (here ringev's
// own, upper{} above) and is served by its own handler, as an accepted connection is.
func ExampleEngine_Dial() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := server.Listen(ctx, "tcp", "127.0.0.1:0", upper{}, server.WithLoops(1))
	if err != nil {
		fmt.Println("Listen:", err)
		return
	}
	e, err := server.NewEngine(ctx, server.WithLoops(1))
	if err != nil {
		fmt.Println("NewEngine:", err)
		return
	}
	got := make(replies, 2)
	c, err := e.Dial(ctx, "tcp", srv.Addr().String(), got)
	if err != nil {
		fmt.Println("Dial:", err)
		return
	}
	c.WriteString("hello\nquit\n") // Write, Close and Abort work from any goroutine
	fmt.Println(<-got)
	fmt.Println(<-got)
	stop()
	e.Wait()
	srv.Wait()
	// Output:
	// HELLO
	// bye
}
