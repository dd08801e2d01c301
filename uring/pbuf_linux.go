package uring

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BufRing is a provided buffer ring (IORING_REGISTER_PBUF_RING, 5.19; see
// io_uring_register_buf_ring(3)): a ring of buffer descriptors shared with
// the kernel, from which requests with SQEBufferSelect (PrepRecvMultishot,
// or SetBufferGroup) take a buffer of group Bgid. The kernel reports the
// buffer it took in CQE.BufferID; give it back with Add and Advance once its
// data is consumed.
//
// The descriptor ring lives in anonymous mmap memory (page-aligned, outside
// the Go heap). The buffers themselves are the caller's: they must stay
// reachable as long as they are in the ring or in use by a request. A
// BufRing belongs to its Ring's goroutine.
type BufRing struct {
	r    *Ring
	mem  []byte // the mmapped descriptor ring
	bufs []Buf  // mem as entries
	mask uint16
	tail uint16 // local tail: entries added, published by Advance
	bgid uint16
}

// SetupBufRing allocates and registers a provided buffer ring of entries
// descriptors (a power of two, at most 32768) for buffer group bgid
// (IORING_REGISTER_PBUF_RING, 5.19). The ring starts empty. Errors wrap the
// mmap or register errno: unix.EINVAL for a bad size or a kernel before 5.19,
// unix.EEXIST when bgid is taken.
func (r *Ring) SetupBufRing(entries uint32, bgid uint16) (*BufRing, error) {
	return r.SetupBufRingFlags(entries, bgid, 0)
}

// SetupBufRingFlags is SetupBufRing with BufReg flags: PbufRingInc (IOU_PBUF_RING_INC, 6.12)
// makes the kernel consume each buffer incrementally: a completion that leaves room in its
// buffer carries CQEFBufMore, the next one continues in the same buffer after it, and the
// buffer goes back to the application only with the completion that fills it (no
// CQEFBufMore). A kernel without the flag fails with an error wrapping unix.EINVAL.
func (r *Ring) SetupBufRingFlags(entries uint32, bgid uint16, flags uint16) (*BufRing, error) {
	if entries == 0 || entries > 32768 || entries&(entries-1) != 0 {
		return nil, fmt.Errorf("uring: SetupBufRing: %d entries, want a power of two <= 32768: %w", entries, unix.EINVAL)
	}
	size := int(entries) * int(unsafe.Sizeof(Buf{}))
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANONYMOUS|unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("uring: SetupBufRing: mmap %d bytes: %w", size, err)
	}
	reg := BufReg{RingAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), RingEntries: entries, Bgid: bgid, Flags: flags}
	if _, err := r.doRegister(RegisterPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return &BufRing{
		r:    r,
		mem:  mem,
		bufs: unsafe.Slice((*Buf)(unsafe.Pointer(&mem[0])), entries),
		mask: uint16(entries - 1),
		bgid: bgid,
	}, nil
}

// Bgid returns the buffer group ID of the ring.
func (b *BufRing) Bgid() uint16 { return b.bgid }

// Add writes buffer buf with ID bid into the descriptor offset places after
// the local tail, without publishing it (Advance does). Add up to Entries
// buffers between Advances. No allocation.
func (b *BufRing) Add(buf []byte, bid uint16, offset int) {
	e := &b.bufs[(b.tail+uint16(offset))&b.mask]
	e.Addr = sliceAddr(buf)
	e.Len = uint32(len(buf))
	e.Bid = bid
}

// Advance publishes the next n descriptors written by Add to the kernel by
// moving the shared tail. No allocation, no syscall.
func (b *BufRing) Advance(n int) {
	b.tail += uint16(n)
	// The 16-bit tail overlays Resv of entry 0, next to that entry's Bid,
	// which only we write. Store the 32-bit word holding both at once:
	// the atomic store is the store-release that makes every descriptor
	// written by Add visible to the kernel before the new tail is.
	w := (*uint32)(unsafe.Pointer(&b.bufs[0].Bid))
	bid := uint32(b.bufs[0].Bid)
	v := bid | uint32(b.tail)<<16
	if bigEndian {
		v = bid<<16 | uint32(b.tail)
	}
	atomic.StoreUint32(w, v)
}

// Provide is Add(buf, bid, 0) followed by Advance(1).
func (b *BufRing) Provide(buf []byte, bid uint16) {
	b.Add(buf, bid, 0)
	b.Advance(1)
}

// Close unregisters the ring (IORING_UNREGISTER_PBUF_RING, 5.19) and frees
// the descriptor memory. Requests still holding a buffer of the group must
// have completed. Errors wrap the register or munmap errno.
func (b *BufRing) Close() error {
	if b.mem == nil {
		return nil
	}
	reg := BufReg{Bgid: b.bgid}
	_, err := b.r.doRegister(UnregisterPbufRing, unsafe.Pointer(&reg), 1)
	if err != nil && b.r.open {
		return err
	}
	// After the ring's Close the kernel has dropped the group with it.
	if merr := unix.Munmap(b.mem); merr != nil {
		return fmt.Errorf("uring: BufRing.Close: munmap: %w", merr)
	}
	b.mem, b.bufs = nil, nil
	return nil
}
