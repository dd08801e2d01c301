//go:build linux

package fileio_test

// Tests of the SQPOLL modes: a kernel SQ thread submits; with deputy submission the owner
// submits itself while that thread sleeps.

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/fileio"
	"golang.org/x/sys/unix"
)

// sqThreads returns the IDs of this process's io_uring SQ threads (comm iou-sqp-*) and their
// states (/proc/self/task/TID/stat: R running, S sleeping).
func sqThreads(t *testing.T) map[int]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range ents {
		comm, err := os.ReadFile("/proc/self/task/" + e.Name() + "/comm")
		if err != nil || !strings.HasPrefix(string(comm), "iou-sqp-") {
			continue
		}
		stat, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		id, _ := strconv.Atoi(e.Name())
		out[id] = fields[0]
	}
	return out
}

// newSQThread waits for an SQ thread that is not in before and returns its ID.
func newSQThread(t *testing.T, before map[int]string) int {
	t.Helper()
	var sqt int
	waitFor(t, "a new SQ thread (iou-sqp-*)", func() bool {
		for id := range sqThreads(t) {
			if _, ok := before[id]; !ok {
				sqt = id
				return true
			}
		}
		return false
	})
	return sqt
}

// TestRingSQThreadCPUItCannotUseIsNamed: NewRing with WithSQThreadCPU on a CPU the kernel
// refuses for the SQ thread (past the CPUs it knows) fails with an error that names the
// option and the CPU, and wraps the EINVAL of io_uring_setup(2).
func TestRingSQThreadCPUItCannotUseIsNamed(t *testing.T) {
	requireSQPoll(t)
	checkLeaks(t)
	const cpu = 1 << 20
	r, err := fileio.NewRing(fileio.WithMode(fileio.ModeSQPoll), fileio.WithSQThreadCPU(cpu))
	if err == nil {
		r.Close()
		t.Fatalf("NewRing with the SQ thread on CPU %d: no error", cpu)
	}
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "WithSQThreadCPU("+strconv.Itoa(cpu)+")") {
		t.Fatalf("error %q does not wrap EINVAL and name WithSQThreadCPU(%d)", err, cpu)
	}
}

func TestRingSQPollSubmitsThroughAnSQThread(t *testing.T) {
	requireSQPoll(t)
	before := sqThreads(t)
	r := newRing(t, fileio.WithMode(fileio.ModeSQPoll), fileio.WithPageCacheFirst(false))
	newSQThread(t, before)
	data := pattern(4096)
	f := openFile(t, r, tempFile(t, data), os.O_RDONLY)
	buf := make([]byte, 4096)
	for range 100 {
		if n, err := f.ReadAt(buf, 0); n != 4096 || err != nil || !bytes.Equal(buf, data) {
			t.Fatalf("ReadAt = %d, %v", n, err)
		}
	}
	if got := r.Stats().RingOps; got != 100 {
		t.Errorf("Stats().RingOps = %d, want 100", got)
	}
}

func TestRingDeputySubmitsWhileTheSQThreadSleeps(t *testing.T) {
	requireSQPoll(t)
	before := sqThreads(t)
	r := newRing(t, fileio.WithMode(fileio.ModeDeputy), fileio.WithSQIdle(time.Millisecond), fileio.WithPageCacheFirst(false))
	sqt := newSQThread(t, before)
	f := openFile(t, r, tempFile(t, pattern(4096)), os.O_RDONLY)
	buf := make([]byte, 4096)
	deadline := time.Now().Add(waitTimeout)
	for i := 0; r.Stats().DeputySQEs == 0; i++ {
		if i == 100 || time.Now().After(deadline) {
			t.Fatalf("%d reads each made while the SQ thread slept, none submitted by the deputy: %+v", i, r.Stats())
		}
		waitFor(t, "the SQ thread asleep", func() bool { return sqThreads(t)[sqt] == "S" })
		if n, err := f.ReadAt(buf, 0); n != 4096 || err != nil {
			t.Fatalf("ReadAt = %d, %v", n, err)
		}
	}
}
