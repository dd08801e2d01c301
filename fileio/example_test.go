//go:build unix

package fileio_test

// The package's runnable example: one file read by many goroutines at once.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/ringev/ringev/fileio"
)

// Example reads a file in 64 KiB chunks from 32 goroutines at once through one Ring: each
// ReadAt parks only its own goroutine, and no OS thread waits per read.
func Example() {
	dir, err := os.MkdirTemp("", "fileio-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "data")
	const chunk = 64 << 10
	if err := os.WriteFile(name, bytes.Repeat([]byte("ringev!\n"), 100*chunk/8), 0o600); err != nil {
		log.Fatal(err)
	}

	r, err := fileio.NewRing() // io_uring where it works, else pread on a pool (r.Reason says why)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	f, err := r.Open(name, os.O_RDONLY, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	offsets := make(chan int64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	lines := 0
	for range 32 {
		wg.Go(func() {
			buf := make([]byte, chunk)
			for off := range offsets {
				n, err := f.ReadAt(buf, off) // io.EOF at the end of the file, as io.ReaderAt
				if err != nil && !errors.Is(err, io.EOF) {
					log.Print(err) // a *fileio.Error: op, file, fd, offset and errno
				}
				mu.Lock()
				lines += bytes.Count(buf[:n], []byte("\n"))
				mu.Unlock()
			}
		})
	}
	for off := int64(0); off < 100*chunk; off += chunk {
		offsets <- off
	}
	close(offsets)
	wg.Wait()
	fmt.Println(lines, "lines")
	// Output: 819200 lines
}
