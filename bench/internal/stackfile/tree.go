package stackfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A stack file and its directory may come from a pull request: they are
// untrusted input. So every path the file names (app.dir, proxy.config)
// is relative and stays inside the file's own directory, and everything
// under it is read through an os.Root, which no "..", absolute path or
// symbolic link leaves. An app directory holds only files, directories
// and links to files inside it, is bounded in files and bytes, and is
// copied into its image as exactly the bytes that were checked.

// Bounds of what a stack directory may hold.
const (
	// MaxAppFiles and MaxAppBytes bound an app directory as it is copied
	// into its image (dot files and __pycache__ left out): its files and
	// directories, and its files' bytes.
	MaxAppFiles = 2000
	MaxAppBytes = 32 << 20
	// MaxConfigBytes bounds proxy.config, MaxFileBytes the stack file.
	MaxConfigBytes = 256 << 10
	MaxFileBytes   = 64 << 10
)

// Tree is an app directory as its image gets it: every file's bytes, read
// once through an os.Root when the directory was checked, so the copy is
// exactly what was checked, whatever changes in the directory afterwards.
type Tree struct {
	// files maps each file's slash-separated path to its bytes.
	files map[string][]byte
	// Entries counts its files and directories, Bytes its files' bytes.
	Entries int
	Bytes   int64
}

// OpenApp is f's app directory as Parse read and checked it (read now
// for a File Parse did not make): see Tree.
func (f File) OpenApp() (*Tree, error) {
	switch {
	case f.App == nil:
		return nil, errors.New("stack file: no app directory (image is set)")
	case f.tree != nil:
		return f.tree, nil
	}
	return readTree(f.Dir, f.App.Dir)
}

// ReadConfig is the proxy.config file of f, read inside f's directory.
func (f File) ReadConfig() ([]byte, error) {
	return readInside(f.Dir, f.Proxy.Config, MaxConfigBytes)
}

// errNoDir is a tree that could not be opened: missing, not a directory,
// or reached through a link that leaves the stack file's directory.
var errNoDir = errors.New("no such directory inside the stack file's directory")

// inside checks that rel is a path a stack file may name: relative, and
// below its directory.
func inside(rel string) error {
	if rel == "" || !filepath.IsLocal(rel) {
		return fmt.Errorf("%q is not a relative path inside the stack file's directory", rel)
	}
	return nil
}

func readTree(dir, rel string) (*Tree, error) {
	if err := inside(rel); err != nil {
		return nil, err
	}
	top, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoDir, plainErr(err))
	}
	defer top.Close()
	r, err := top.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoDir, plainErr(err))
	}
	defer r.Close()
	t := &Tree{files: map[string][]byte{}}
	if err := t.read(r); err != nil {
		return nil, err
	}
	return t, nil
}

// read walks r, refusing what a tree must not hold and keeping every
// file's bytes within the bounds.
func (t *Tree) read(r *os.Root) error {
	return fs.WalkDir(copied{r.FS()}, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return plainErr(err)
		}
		if p == "." {
			return nil
		}
		if t.Entries++; t.Entries > MaxAppFiles {
			return fmt.Errorf("more than %d files and directories", MaxAppFiles)
		}
		typ := d.Type()
		switch {
		case typ.IsDir():
			return nil
		case typ&fs.ModeSymlink == 0 && !typ.IsRegular():
			return fmt.Errorf("%s is %s", p, kind(typ))
		}
		b, err := readFile(r, p, MaxAppBytes-t.Bytes, typ&fs.ModeSymlink != 0)
		if err != nil {
			return err
		}
		t.Bytes += int64(len(b))
		t.files[p] = b
		return nil
	})
}

// readFile reads the regular file p in r (a link to one, when link),
// following a link only inside r and never blocking on a pipe put in its
// place, at most max bytes.
func readFile(r *os.Root, p string, max int64, link bool) ([]byte, error) {
	fh, err := r.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case err != nil && link:
		return nil, fmt.Errorf("%s is a link that leaves the directory, or leads nowhere", p)
	case err != nil:
		return nil, plainErr(err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case !st.Mode().IsRegular() && link:
		return nil, fmt.Errorf("%s is a link to %s, not to a file", p, kind(st.Mode()))
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is %s, not a file", p, kind(st.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("more than %d MiB", MaxAppBytes>>20)
	}
	return b, nil
}

// Files is the tree as its image gets it: each file's path (slash
// separated, relative to app.dir) and the bytes read when it was checked.
func (t *Tree) Files() map[string][]byte { return maps.Clone(t.files) }

// Has is whether the tree holds the file name (its module).
func (t *Tree) Has(name string) bool {
	_, ok := t.files[name]
	return ok
}

// copied hides dot files and __pycache__ from fs.WalkDir.
type copied struct{ fs.FS }

func (c copied) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(c.FS, name)
	var out []fs.DirEntry
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != "__pycache__" {
			out = append(out, e)
		}
	}
	return out, err
}

// readInside reads the file rel below dir, at most max bytes.
func readInside(dir, rel string, max int64) ([]byte, error) {
	if err := inside(rel); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readFile(r, rel, max, true)
}

// readFileAt reads the stack file at path itself: a regular file, not a
// link (whose target could be anything on the machine), at most
// MaxFileBytes.
func readFileAt(path string) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s: want the stack file itself, a regular file (a stack file is untrusted input)", path, kind(st.Mode()))
	}
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s is over %d KiB: want a stack file, a few lines of YAML", path, MaxFileBytes>>10)
	}
	return b, nil
}

// kind names a file type in words.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// plainErr drops the *PathError's operation and the root's own path from
// err, leaving what a stack file's author can act on.
func plainErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}
