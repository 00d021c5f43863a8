package probe

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// files reads the small kernel files a probe samples every tick. A nil
// *files reads each file afresh (os.ReadFile, os.Stat). A sampler's own
// files keeps each file open between ticks and re-reads it with pread at
// offset 0, which makes proc and cgroup files (seq_files) generate their
// content anew: that saves each read the walk of its path through
// /proc/PID/root or /proc/PID/task/TID, an open and a close, most of what
// a read costs. Which files exist is remembered: a cgroup's layout does
// not change under a running container.
type files struct {
	// comm keeps each thread's name between process listings (forget):
	// a name read every tick was a third of the wait sites' reads. A
	// thread renamed after it started (Python 3.14 names its threads
	// itself, a server may too) shows its new name from the next
	// listing on, at most RefreshEvery ticks later.
	comm  map[string]string
	open  map[string]*os.File
	used  map[string]bool
	exist map[string]bool
	buf   []byte
}

func newFiles() *files {
	return &files{comm: map[string]string{}, open: map[string]*os.File{}, used: map[string]bool{}, exist: map[string]bool{}, buf: make([]byte, 64<<10)}
}

// read returns path's content. A file that fails to read (a thread that
// exited answers ESRCH) is closed and forgotten, and the error returned.
func (f *files) read(path string) ([]byte, error) {
	if f == nil {
		return os.ReadFile(path)
	}
	fd, err := f.file(path)
	if err != nil {
		return nil, err
	}
	// One pread: a proc or cgroup file generates all of its (small)
	// content at once, where ReadAt would call again for the EOF.
	n, err := unix.Pread(int(fd.Fd()), f.buf, 0)
	if err != nil {
		err = &fs.PathError{Op: "pread", Path: path, Err: err}
		fd.Close()
		delete(f.open, path)
		return nil, err
	}
	if n == len(f.buf) {
		// Larger than the buffer: read it whole, the plain way.
		return os.ReadFile(path)
	}
	return append([]byte(nil), f.buf[:n]...), nil
}

// file is path's kept descriptor, opened at its first use, and marks it
// read this tick.
func (f *files) file(path string) (*os.File, error) {
	fd, ok := f.open[path]
	if !ok {
		var err error
		if fd, err = os.Open(path); err != nil {
			return nil, err
		}
		f.open[path] = fd
	}
	f.used[path] = true
	return fd, nil
}

// threads lists the thread ids in a /proc/PID/task directory, in order.
func (f *files) threads(task string) ([]int, error) {
	_, names, done, err := f.list(task)
	if err != nil {
		return nil, err
	}
	done()
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
}

// list lists a directory of /proc/PID (task, fd) and returns it open, for
// reads relative to it, until done is called. A sampler's files keep the
// directory open: seeking it to 0 lists it anew. A nil *files opens it
// for the one listing, and done closes it.
func (f *files) list(dir string) (d *os.File, names []string, done func(), err error) {
	if f == nil {
		if d, err = os.Open(dir); err != nil {
			return nil, nil, nil, err
		}
		if names, err = d.Readdirnames(-1); err != nil {
			d.Close()
			return nil, nil, nil, err
		}
		return d, names, func() { d.Close() }, nil
	}
	if d, err = f.file(dir); err != nil {
		return nil, nil, nil, err
	}
	_, err = d.Seek(0, io.SeekStart)
	if err == nil {
		names, err = d.Readdirnames(-1)
	}
	if err != nil {
		d.Close()
		delete(f.open, dir)
		return nil, nil, nil, err
	}
	if len(names) == 0 {
		// The directory of an exited process lists nothing.
		return nil, nil, nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	return d, names, func() {}, nil
}

// FDKinds counts descriptors by what they reach: Sockets, Files (a path:
// a regular file, a device, a directory) and Other (pipes and the
// kernel's anonymous inodes: eventfd, epoll, timerfd, signalfd), which a
// server's event loop makes for itself, some of them on first use.
type FDKinds struct {
	Sockets, Files, Other int
}

// Total is every descriptor counted.
func (k FDKinds) Total() int { return k.Sockets + k.Files + k.Other }

// add counts one descriptor by its link (readlink of /proc/PID/fd/N),
// read as bytes: the sampler allocates nothing a tick.
func (k *FDKinds) add(link []byte) {
	switch {
	case bytes.HasPrefix(link, []byte("socket:")):
		k.Sockets++
	case bytes.HasPrefix(link, []byte("/")):
		k.Files++
	default:
		k.Other++
	}
}

// linkBuf is a buffer for readlinkat: a sampler's own, which it reuses
// every tick (its collector is off), or a new one for a nil *files.
func (f *files) linkBuf() []byte {
	if f != nil {
		return f.buf
	}
	return make([]byte, unix.PathMax)
}

// MaxSortedFDs bounds the descriptors fdCount sorts by kind in one
// sample: a readlink each. The cells that read the kinds (a fault's leak
// check) hold a few dozen; a scale step's NGINX holds thousands, which
// are counted (Other) but not sorted.
const MaxSortedFDs = 512

// fdCount is how many descriptors pids hold open, by kind: the entries
// of each one's /proc/PID/fd, their links read relative to it, up to
// MaxSortedFDs in all; past it every descriptor counts as Other. A
// process that exits meanwhile counts none, a descriptor closed since the
// listing none.
func (f *files) fdCount(procRoot string, pids []int) (FDKinds, error) {
	var k FDKinds
	buf := f.linkBuf()
	sort := true
	for _, pid := range pids {
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		d, names, done, err := f.list(dir)
		if gone(err) {
			continue
		}
		if err != nil {
			return k, fileErr(dir, err)
		}
		if sort = sort && k.Total()+len(names) <= MaxSortedFDs; !sort {
			// Past the bound nothing is sorted, what was before included.
			k = FDKinds{Other: k.Total() + len(names)}
			done()
			continue
		}
		for _, name := range names {
			n, err := unix.Readlinkat(int(d.Fd()), name, buf)
			if gone(err) {
				continue
			}
			if err != nil {
				done()
				return k, fileErr(filepath.Join(dir, name), &fs.PathError{Op: "readlink", Path: filepath.Join(dir, name), Err: err})
			}
			k.add(buf[:n])
		}
		done()
	}
	return k, nil
}

// exists tells whether path exists, remembering a yes or a no.
func (f *files) exists(path string) (bool, error) {
	if f != nil {
		if e, ok := f.exist[path]; ok {
			return e, nil
		}
	}
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if f != nil {
		f.exist[path] = err == nil
	}
	return err == nil, nil
}

// threadName is the thread name in dir (/proc/PID/task/TID), read at its
// first use after forget.
func (f *files) threadName(dir string) (string, error) {
	if f != nil {
		if c, ok := f.comm[dir]; ok {
			return c, nil
		}
	}
	b, err := f.read(filepath.Join(dir, "comm"))
	if err != nil {
		return "", fileErr(filepath.Join(dir, "comm"), err)
	}
	c := strings.TrimSuffix(string(b), "\n")
	if f != nil {
		f.comm[dir] = c
	}
	return c, nil
}

// forget drops the thread names read so far.
func (f *files) forget() {
	if f != nil {
		clear(f.comm)
	}
}

// sweep closes the files not read since the last sweep: those of threads
// and processes that are gone.
func (f *files) sweep() {
	for p, fd := range f.open {
		if !f.used[p] {
			fd.Close()
			delete(f.open, p)
		}
	}
	clear(f.used)
}

// Close closes every file kept open.
func (f *files) Close() {
	for _, fd := range f.open {
		fd.Close()
	}
	clear(f.open)
}
