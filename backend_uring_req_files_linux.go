package ringev

// The uring driver's registered-file table (RegisterFile): a sparse table made at the first
// registration, a slot per fd number, emptied when the loop closes.

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/kernel"
	"github.com/ringev/ringev/uring"
)

// maxFileSlots bounds the registered-file table: the kernel keeps a pointer per slot.
const maxFileSlots = 65536

// fileReleaseKernel is the first kernel whose registered-file table lets a file go as soon as
// its slot is emptied and the requests that took it are done. Before, the kernel puts the
// files of an emptied slot in a delayed work that runs a second (HZ) later: measured on
// Linux 6.1, a pipe's writer saw EPIPE 1.05-1.09 s after the slot was emptied and the read
// end closed; on 6.12 within 2 ms. No probe tells it but a wait, so the version decides.
var fileReleaseKernel = [2]int{6, 4}

// fileReleaseAtOnce reports whether the kernel is at least fileReleaseKernel; tests replace
// it to play an older kernel (SetFileReleaseLate).
var fileReleaseAtOnce = func() bool { return kernel.AtLeast(fileReleaseKernel[0], fileReleaseKernel[1]) }

// registerFilesSparse makes the ring's registered-file table; tests replace it to play a kernel
// without sparse tables (SetFileTableFault).
var registerFilesSparse = (*uring.Ring).RegisterFilesSparse

func (d *ringReqs) fixFile(fd int32, on, live bool) (bool, error) {
	ring := d.b.ring
	if !on {
		// Every SQE that may carry the slot reaches the kernel first, which takes the file at
		// the request's issue and keeps it to its completion.
		if live && d.queued() {
			if err := d.flush(); err != nil {
				return true, err
			}
			if _, err := d.b.entering().Submit(); err != nil {
				return true, fmt.Errorf("submitting the SQEs prepared before: %w", err)
			}
		}
		d.fdArg[0] = -1
		if _, err := ring.UpdateFiles(uint32(fd), d.fdArg[:]); err != nil {
			return true, fmt.Errorf("emptying slot %d of the registered-file table (IORING_REGISTER_FILES_UPDATE, Linux 5.5): %w", fd, err)
		}
		return false, nil
	}
	if d.slots == 0 {
		if !fileReleaseAtOnce() {
			return false, fmt.Errorf("registered files: this kernel (%s) releases a file whose slot is emptied up to a second later (a delayed work, before Linux %d.%d), so a CloseFd would leave the peer without EOF that long; requests on fd stay unregistered: %w",
				kernel.Release(), fileReleaseKernel[0], fileReleaseKernel[1], unix.EOPNOTSUPP)
		}
		n := uint32(maxFileSlots)
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(n) {
			n = uint32(lim.Cur)
		}
		if err := registerFilesSparse(ring, n); err != nil {
			return false, fmt.Errorf("making a registered-file table of %d slots (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE, Linux 5.19): %w", n, err)
		}
		d.slots = n
	}
	if uint32(fd) >= d.slots {
		return false, fmt.Errorf("the registered-file table has %d slots (min(RLIMIT_NOFILE, %d)): %w", d.slots, maxFileSlots, unix.ERANGE)
	}
	d.fdArg[0] = fd
	if _, err := ring.UpdateFiles(uint32(fd), d.fdArg[:]); err != nil {
		return false, fmt.Errorf("filling slot %d of the registered-file table (IORING_REGISTER_FILES_UPDATE, Linux 5.5): %w", fd, err)
	}
	return true, nil
}

// emptyFileTable empties every slot of the registered-file table that RegisterFile filled, in
// one IORING_REGISTER_FILES_UPDATE (Linux 5.5; RegisterFilesSkip for the slots between, 5.12),
// so that Loop.Close releases those files before it returns: the kernel's teardown of the ring
// after close(2) of its fd runs later, in a worker (~30 ms here). It does not wait for requests
// still in the kernel, which hold the file until their CQE (an IORING_UNREGISTER_FILES could
// wait for them before 6.13). Errors are ignored: the teardown releases the files anyway.
func (d *ringReqs) emptyFileTable() {
	if d.slots == 0 {
		return
	}
	lo, hi := -1, -1
	for i := range d.rq.fds {
		if d.rq.fds[i].is(fdFixed) {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 {
		return
	}
	fds := make([]int32, hi-lo+1)
	for i := range fds {
		fds[i] = uring.RegisterFilesSkip
		if f := &d.rq.fds[lo+i]; f.is(fdFixed) {
			fds[i] = -1
			f.set(fdFixed, false)
		}
	}
	d.b.ring.UpdateFiles(uint32(lo), fds)
}
