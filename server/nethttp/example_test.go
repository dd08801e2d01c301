//go:build linux

package nethttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ringev/ringev/server"
	"github.com/ringev/ringev/server/nethttp"
)

// A ServeMux with an http.Server's settings on ringev's loops, asked by net/http's client.
func ExampleNew() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", r.PathValue("name"))
	})
	s := nethttp.New(&http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second})
	ctx, stop := context.WithCancel(context.Background())
	e, err := server.Listen(ctx, "tcp", "127.0.0.1:0", s, server.WithLoops(1))
	if err != nil {
		stop()
		fmt.Println("Listen:", err)
		return
	}
	resp, err := http.Get("http://" + e.Addr().String() + "/hello/gopher")
	if err != nil {
		fmt.Println("Get:", err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.Status, " ", string(body))
	}
	http.DefaultClient.CloseIdleConnections()
	stop()   // the engine shuts down
	e.Wait() // its connections are closed
	s.Wait() // no handler runs
	// Output:
	// 200 OK hello, gopher
}
