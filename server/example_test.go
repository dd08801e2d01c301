//go:build linux

package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"

	"github.com/ringev/ringev/server"
)

// A RESP server on a free port, asked PING and SET/GET by a client, then shut down.
func ExampleStart() {
	ks := server.NewKeyspace() // shared by the loops (one here)
	srv, err := server.Start(server.Config{
		Addr:        "127.0.0.1:0",
		NewProtocol: func() server.Protocol { return server.NewRESP(ks) },
	})
	if err != nil {
		fmt.Println("Start:", err)
		return
	}
	c, err := net.Dial("tcp", srv.Addr())
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
	srv.Shutdown() // stop accepting, finish what the connections sent, close them
	if err := srv.Wait(); err != nil {
		fmt.Println("Wait:", err)
	}
	// Output:
	// "+PONG\r\n"
	// "+OK\r\n"
	// "$5\r\n"
	// "hello\r\n"
}

// upper is a protocol of one's own: each line received is sent back in upper case. Serve sees
// the bytes received and not yet consumed; it consumes whole lines only, and leaves a partial line
// for the next call, when the rest of it has arrived.
type upper struct{}

func (upper) Serve(in, out []byte) (int, []byte, bool) {
	used := 0
	for len(out) < server.OutputLimit {
		i := bytes.IndexByte(in[used:], '\n')
		if i < 0 {
			break // an incomplete line: wait for more
		}
		line := in[used : used+i+1]
		used += i + 1
		if string(line) == "quit\n" {
			return used, append(out, "bye\n"...), true // closeAfter: reply, then close
		}
		out = append(out, bytes.ToUpper(line)...)
	}
	if used == 0 && len(in) > 1024 {
		return len(in), append(out, "line too long\n"...), true // bound the input buffer
	}
	return used, out, false
}

// A protocol of one's own on the requests driver (the default API), with two loops on two OS
// threads.
func ExampleProtocol() {
	srv, err := server.Start(server.Config{
		Addr:        "127.0.0.1:0",
		Loops:       2,
		NewProtocol: func() server.Protocol { return upper{} },
	})
	if err != nil {
		fmt.Println("Start:", err)
		return
	}
	defer srv.Wait()
	defer srv.Shutdown()
	c, err := net.Dial("tcp", srv.Addr())
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
