package load

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The closed loop's calls never block (its descriptors are non-blocking,
// and it polls its epoll set with no timeout), so they go through
// RawSyscall: no entersyscall and exitsyscall around each, which let the
// runtime hand the loop's P to another thread and back.

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func rawSocket(family, typ int) (int, error) {
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), uintptr(typ), 0)
	return int(fd), errnoErr(e)
}

func rawConnect(fd int, sa *unix.RawSockaddrInet4) error {
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(sa)), unix.SizeofSockaddrInet4)
	return errnoErr(e)
}

func rawRead(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), errnoErr(e)
}

func rawWrite(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), errnoErr(e)
}

func rawClose(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

func rawSoError(fd int) (int, error) {
	var v int32
	l := uint32(4)
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	return int(v), errnoErr(e)
}

func rawEpollAdd(ep, fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(ep), unix.EPOLL_CTL_ADD, uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
	return errnoErr(e)
}

// rawEpollPoll returns the events ready now, without waiting.
func rawEpollPoll(ep int, events []unix.EpollEvent) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(unsafe.SliceData(events))),
		uintptr(len(events)), 0, 0, 0)
	return int(n), errnoErr(e)
}
