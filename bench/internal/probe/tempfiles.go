package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// TempFile is one regular file held open under the temp dir.
type TempFile struct {
	// Path is the fd's target without the kernel's " (deleted)" suffix.
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
	Deleted   bool   `json:"deleted"`
}

// TempFileUsage is what a set of processes holds open under a temp dir
// (NGINX buffers responses there once its memory buffers are full).
type TempFileUsage struct {
	// TotalBytes is the sum of the distinct files' logical sizes.
	TotalBytes int64      `json:"total_bytes"`
	FileCount  int        `json:"file_count"`
	Files      []TempFile `json:"files"`
}

// deletedSuffix is what the kernel appends to an fd's link text once the
// file is unlinked; NGINX unlinks its temp files right after creating them.
const deletedSuffix = " (deleted)"

// TempFiles walks <procRoot>/<pid>/fd of each pid and sums the regular files
// open under tempDir, each file once however many fds or processes hold it.
// A pid that exits meanwhile is skipped. Reading another process's fds
// needs ptrace access (CAP_SYS_PTRACE in the probe's container).
func TempFiles(procRoot string, pids []int, tempDir string) (TempFileUsage, error) {
	return (*files)(nil).tempFiles(procRoot, pids, tempDir)
}

// checkProcRoot fails for a procRoot that is not a directory, where every
// pid would otherwise look gone.
func checkProcRoot(procRoot string) error {
	fi, err := os.Stat(procRoot)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("not a directory")
	}
	if err != nil {
		return fileErr(procRoot, err)
	}
	return nil
}

// tempFiles walks the fd directories through f: a sampler keeps each one
// open, lists it again from offset 0 and reads its links relative to it
// (readlinkat, fstatat), which spares each of an NGINX worker's few dozen
// fds the walk of /proc/PID/fd/N from the root.
func (f *files) tempFiles(procRoot string, pids []int, tempDir string) (TempFileUsage, error) {
	u := TempFileUsage{Files: []TempFile{}}
	if f == nil { // a sampler lists its root (rolesOf) before any tick
		if err := checkProcRoot(procRoot); err != nil {
			return u, err
		}
	}
	dir := filepath.Clean(tempDir)
	type fileID struct{ dev, ino uint64 }
	seen := map[fileID]bool{}
	buf := f.linkBuf()
	for _, pid := range pids {
		fdDir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		d, names, done, err := f.list(fdDir)
		if gone(err) {
			continue
		}
		if err != nil {
			return u, fileErr(fdDir, err)
		}
		for _, name := range names {
			n, err := unix.Readlinkat(int(d.Fd()), name, buf)
			if gone(err) { // fd closed since the listing
				continue
			}
			if err != nil {
				done()
				return u, fileErr(filepath.Join(fdDir, name), &fs.PathError{Op: "readlink", Path: filepath.Join(fdDir, name), Err: err})
			}
			path, deleted := strings.CutSuffix(string(buf[:n]), deletedSuffix)
			if !isUnder(path, dir) {
				continue
			}
			// Stat the link, not path: /proc's fd links reach the open inode
			// even when path is unlinked or reused.
			var st unix.Stat_t
			err = unix.Fstatat(int(d.Fd()), name, &st, 0)
			if gone(err) {
				continue
			}
			if err != nil {
				done()
				return u, fileErr(filepath.Join(fdDir, name), &fs.PathError{Op: "stat", Path: filepath.Join(fdDir, name), Err: err})
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			id := fileID{st.Dev, st.Ino}
			if seen[id] {
				continue
			}
			seen[id] = true
			u.Files = append(u.Files, TempFile{Path: path, SizeBytes: st.Size, Deleted: deleted})
			u.TotalBytes += st.Size
		}
		done()
	}
	slices.SortStableFunc(u.Files, func(a, b TempFile) int { return strings.Compare(a.Path, b.Path) })
	u.FileCount = len(u.Files)
	return u, nil
}

// isUnder reports whether path lies strictly inside dir. Link texts such as
// "socket:[123]" or "pipe:[4]" are not absolute and never match.
func isUnder(path, dir string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// gone reports whether err means the process, thread or fd went away
// between listing and reading: the kernel answers ENOENT or ESRCH.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// fileErr names path in err unless err already does (as *fs.PathError).
func fileErr(path string, err error) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return fmt.Errorf("probe: %w", err)
	}
	return fmt.Errorf("probe: %s: %w", path, err)
}
