package ringev

// The uring backend's side of Loop.RegisterBuffers.

import "github.com/ringev/ringev/uring"

// registerBuffers registers bufs with the backend's ring (IORING_REGISTER_BUFFERS, 5.1), which
// keeps them reachable until it closes.
func (d *ringReqs) registerBuffers(bufs [][]byte) error { return d.b.ring.RegisterBuffers(bufs) }

// fixedOpcode is the opcode of a Read or Write on a registered buffer (reqRec.flags > 0).
var fixedOpcode = [...]uint8{OpRead: uring.OpReadFixed, OpWrite: uring.OpWriteFixed}
