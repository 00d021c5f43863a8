package probe

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"

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
	open  map[string]*os.File
	used  map[string]bool
	exist map[string]bool
	buf   []byte
}

func newFiles() *files {
	return &files{open: map[string]*os.File{}, used: map[string]bool{}, exist: map[string]bool{}, buf: make([]byte, 64<<10)}
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
// The directory stays open too: seeking it to 0 lists it anew.
func (f *files) threads(task string) ([]int, error) {
	var names []string
	if f == nil {
		entries, err := os.ReadDir(task)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	} else {
		fd, err := f.file(task)
		if err != nil {
			return nil, err
		}
		_, err = fd.Seek(0, io.SeekStart)
		if err == nil {
			names, err = fd.Readdirnames(-1)
		}
		if err != nil {
			fd.Close()
			delete(f.open, task)
			return nil, err
		}
		if len(names) == 0 {
			// The directory of an exited process lists nothing.
			return nil, &fs.PathError{Op: "readdir", Path: task, Err: fs.ErrNotExist}
		}
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
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
