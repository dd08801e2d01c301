//go:build linux

package uring

import (
	"testing"
	"unsafe"
)

// TestABISizes checks the Go structs against the io_uring.h layouts.
func TestABISizes(t *testing.T) {
	sizes := []struct {
		name      string
		got, want uintptr
	}{
		{"SQE", unsafe.Sizeof(SQE{}), 64},
		{"CQE", unsafe.Sizeof(CQE{}), 16},
		{"Params", unsafe.Sizeof(Params{}), 120},
		{"SQRingOffsets", unsafe.Sizeof(SQRingOffsets{}), 40},
		{"CQRingOffsets", unsafe.Sizeof(CQRingOffsets{}), 40},
		{"GeteventsArg", unsafe.Sizeof(GeteventsArg{}), 24},
		{"RsrcRegister", unsafe.Sizeof(RsrcRegister{}), 32},
		{"RsrcUpdate", unsafe.Sizeof(RsrcUpdate{}), 16},
		{"ProbeHeader", unsafe.Sizeof(ProbeHeader{}), 16},
		{"ProbeOp", unsafe.Sizeof(ProbeOp{}), 8},
		{"BufReg", unsafe.Sizeof(BufReg{}), 40},
		{"Buf", unsafe.Sizeof(Buf{}), 16},
		{"Timespec", unsafe.Sizeof(Timespec{}), 16},
		{"SyncCancelReg", unsafe.Sizeof(SyncCancelReg{}), 64},
	}
	for _, s := range sizes {
		if s.got != s.want {
			t.Errorf("sizeof(%s) = %d, want %d", s.name, s.got, s.want)
		}
	}
	var sqe SQE
	var cqe CQE
	var p Params
	var arg GeteventsArg
	offsets := []struct {
		name      string
		got, want uintptr
	}{
		{"SQE.Opcode", unsafe.Offsetof(sqe.Opcode), 0},
		{"SQE.Flags", unsafe.Offsetof(sqe.Flags), 1},
		{"SQE.Ioprio", unsafe.Offsetof(sqe.Ioprio), 2},
		{"SQE.Fd", unsafe.Offsetof(sqe.Fd), 4},
		{"SQE.Off", unsafe.Offsetof(sqe.Off), 8},
		{"SQE.Addr", unsafe.Offsetof(sqe.Addr), 16},
		{"SQE.Len", unsafe.Offsetof(sqe.Len), 24},
		{"SQE.OpFlags", unsafe.Offsetof(sqe.OpFlags), 28},
		{"SQE.UserData", unsafe.Offsetof(sqe.UserData), 32},
		{"SQE.BufIndex", unsafe.Offsetof(sqe.BufIndex), 40},
		{"SQE.Personality", unsafe.Offsetof(sqe.Personality), 42},
		{"SQE.SpliceFdIn", unsafe.Offsetof(sqe.SpliceFdIn), 44},
		{"SQE.Addr3", unsafe.Offsetof(sqe.Addr3), 48},
		{"CQE.UserData", unsafe.Offsetof(cqe.UserData), 0},
		{"CQE.Res", unsafe.Offsetof(cqe.Res), 8},
		{"CQE.Flags", unsafe.Offsetof(cqe.Flags), 12},
		{"Params.Features", unsafe.Offsetof(p.Features), 20},
		{"Params.WQFd", unsafe.Offsetof(p.WQFd), 24},
		{"Params.SQOff", unsafe.Offsetof(p.SQOff), 40},
		{"Params.CQOff", unsafe.Offsetof(p.CQOff), 80},
		{"SQRingOffsets.Array", unsafe.Offsetof(p.SQOff.Array), 24},
		{"SQRingOffsets.UserAddr", unsafe.Offsetof(p.SQOff.UserAddr), 32},
		{"CQRingOffsets.CQEs", unsafe.Offsetof(p.CQOff.CQEs), 20},
		{"CQRingOffsets.UserAddr", unsafe.Offsetof(p.CQOff.UserAddr), 32},
		{"GeteventsArg.SigmaskSz", unsafe.Offsetof(arg.SigmaskSz), 8},
		{"GeteventsArg.Ts", unsafe.Offsetof(arg.Ts), 16},
	}
	for _, o := range offsets {
		if o.got != o.want {
			t.Errorf("offsetof(%s) = %d, want %d", o.name, o.got, o.want)
		}
	}
}

// TestOpcodesInKernelOrder spot-checks opcode values against io_uring.h.
func TestOpcodesInKernelOrder(t *testing.T) {
	ops := []struct {
		name      string
		got, want uint8
	}{
		{"OpPollAdd", OpPollAdd, 6},
		{"OpAsyncCancel", OpAsyncCancel, 14},
		{"OpEpollCtl", OpEpollCtl, 29},
		{"OpSendZC", OpSendZC, 47},
		{"OpEpollWait", OpEpollWait, 59},
		{"OpPipe", OpPipe, 62},
	}
	for _, o := range ops {
		if o.got != o.want {
			t.Errorf("%s = %d, want %d", o.name, o.got, o.want)
		}
	}
}
