package ringev

// The uring driver's buffer groups: a BufferGroup and its provided buffer ring
// (IORING_REGISTER_PBUF_RING).

import (
	"fmt"
	"unsafe"

	"github.com/ringev/ringev/uring"
)

// ringGroup is a buffer group on the uring backend: the core's group and its provided buffer
// ring.
type ringGroup struct {
	BufferGroup
	ring *uring.BufRing
}

// ringGroupOf returns the ringGroup whose first field g is: g is a uring loop's group.
func ringGroupOf(g *BufferGroup) *ringGroup { return (*ringGroup)(unsafe.Pointer(g)) }

func (d *ringReqs) newGroup(bgid uint16, n, size int) (*BufferGroup, error) {
	rg := new(ringGroup)
	g := &rg.BufferGroup
	d.rq.l.initGroup(g, bgid, n, size)
	// Incremental consumption first (6.12): small messages then share a buffer.
	br, err := d.b.ring.SetupBufRingFlags(uint32(g.n), g.bgid, uring.PbufRingInc)
	g.inc = err == nil
	if err != nil {
		br, err = d.b.ring.SetupBufRing(uint32(g.n), g.bgid)
	}
	if err != nil {
		return nil, fmt.Errorf("ringev: NewBufferGroup: IORING_REGISTER_PBUF_RING (Linux 5.19): %w", err)
	}
	rg.ring = br
	for i := 0; i < g.n; i++ {
		br.Add(g.buf(i, g.size), uint16(i), i)
	}
	br.Advance(g.n)
	return g, nil
}

func (d *ringReqs) provide(g *BufferGroup, bid int) {
	ringGroupOf(g).ring.Provide(g.buf(bid, g.size), uint16(bid))
}

func (d *ringReqs) closeGroup(g *BufferGroup) error {
	rg := ringGroupOf(g)
	if rg.ring == nil {
		return nil
	}
	err := rg.ring.Close()
	rg.ring = nil
	return err
}
