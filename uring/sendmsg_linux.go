package uring

import "golang.org/x/sys/unix"

// The message ops, sendmsg(2) and recvmsg(2) as SQEs: what a datagram socket needs, the peer's
// address going with each message. Kept in a file of their own (prep.go holds the others in
// opcode order) so that their users' changes do not meet the other ops'.

// PrepSendmsg prepares IORING_OP_SENDMSG (5.3), sendmsg(2) of msg on socket fd with msg flags
// (unix.MSG_*). Res is the number of bytes sent or -errno. msg, its iovecs, their buffers and
// its address (Name) must stay reachable and unchanged until the CQE. See io_uring_prep_sendmsg(3).
func (s *SQE) PrepSendmsg(fd int, msg *unix.Msghdr, flags int) {
	s.prepRW(OpSendmsg, fd, addr(msg), 1, 0)
	s.OpFlags = uint32(flags)
}

// PrepRecvmsg prepares IORING_OP_RECVMSG (5.3), recvmsg(2) into msg from socket fd with msg
// flags. Res is the number of bytes received or -errno; the kernel writes the peer's address
// to msg.Name (and its length to msg.Namelen) and the message's flags (unix.MSG_TRUNC, ...) to
// msg.Flags. msg and what it points to must stay reachable until the CQE. See
// io_uring_prep_recvmsg(3).
func (s *SQE) PrepRecvmsg(fd int, msg *unix.Msghdr, flags int) {
	s.prepRW(OpRecvmsg, fd, addr(msg), 1, 0)
	s.OpFlags = uint32(flags)
}
