package bench

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the user and system CPU time of the whole process
// (getrusage(2) RUSAGE_SELF: every thread of the thread group, the io_uring
// SQ thread included, since it belongs to the group).
func processCPU() (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// taskIDs returns the thread IDs in /proc/self/task.
func taskIDs() map[int]bool {
	ids := map[int]bool{}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return ids
	}
	for _, e := range ents {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids[id] = true
		}
	}
	return ids
}

// findSQThread returns the ID of an io_uring SQPOLL thread (comm
// "iou-sqp-<pid>") of this process that is not in before, or 0. A new SQ
// thread names itself only once it runs, so it looks for up to 200 ms.
func findSQThread(before map[int]bool) int {
	for deadline := time.Now().Add(200 * time.Millisecond); ; time.Sleep(time.Millisecond) {
		if id := findSQThreadOnce(before); id != 0 || time.Now().After(deadline) {
			return id
		}
	}
}

func findSQThreadOnce(before map[int]bool) int {
	for id := range taskIDs() {
		if before[id] {
			continue
		}
		comm, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(id) + "/comm")
		if err == nil && strings.HasPrefix(string(comm), "iou-sqp-") {
			return id
		}
	}
	return 0
}

// threadCPU returns the CPU time of thread tid of this process: from
// /proc/self/task/TID/schedstat (nanoseconds on the CPU) when the kernel has
// schedstats, else utime+stime from /proc/self/task/TID/stat (clock ticks,
// USER_HZ = 100). ok is false when the thread is gone.
func threadCPU(tid int) (d time.Duration, ok bool) {
	dir := "/proc/self/task/" + strconv.Itoa(tid)
	if b, err := os.ReadFile(dir + "/schedstat"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return time.Duration(ns), true
			}
		}
	}
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may contain spaces: fields
	// are counted after the last ')'. utime and stime are fields 14, 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const userHZ = 100
	return time.Duration(ut+st) * time.Second / userHZ, true
}
