package stackfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A stack file and its directory may come from a pull request: they are
// untrusted input. So every path the file names (app.dir, proxy.config)
// is relative and stays inside the file's own directory, and everything
// under it is read through an os.Root, which no "..", absolute path or
// symbolic link leaves. An app directory holds only files, directories
// and links to files inside it, is bounded in files and bytes, and is
// copied into its image as exactly what was checked.

// Bounds of what a stack directory may hold.
const (
	// MaxAppFiles and MaxAppBytes bound an app directory as it is copied
	// into its image (dot files and __pycache__ left out).
	MaxAppFiles = 2000
	MaxAppBytes = 32 << 20
	// MaxConfigBytes bounds proxy.config.
	MaxConfigBytes = 256 << 10
)

// Tree is an app directory opened for copying into an image: its files
// and bytes as counted when it was checked, and an fs.FS that reads them
// through the same os.Root.
type Tree struct {
	root  *os.Root
	Files int
	Bytes int64
}

// OpenApp opens f's app directory, checked: see Tree. The caller closes
// it.
func (f File) OpenApp() (*Tree, error) {
	if f.App == nil {
		return nil, errors.New("stack file: no app directory (image is set)")
	}
	return openTree(f.Dir, f.App.Dir)
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

func openTree(dir, rel string) (*Tree, error) {
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
	t := &Tree{root: r}
	if err := t.scan(); err != nil {
		r.Close()
		return nil, err
	}
	return t, nil
}

// scan counts what the tree copies and refuses what it must not.
func (t *Tree) scan() error {
	return fs.WalkDir(t.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return plainErr(err)
		}
		var size int64
		switch typ := d.Type(); {
		case typ.IsDir():
			return nil
		case typ&fs.ModeSymlink != 0:
			st, err := t.root.Stat(p) // follows a link inside the root only
			if err != nil {
				return fmt.Errorf("%s is a link that leaves the directory, or leads nowhere", p)
			}
			if !st.Mode().IsRegular() {
				return fmt.Errorf("%s is a link to %s, not to a file", p, kind(st.Mode()))
			}
			size = st.Size()
		case typ.IsRegular():
			st, err := d.Info()
			if err != nil {
				return err
			}
			size = st.Size()
		default:
			return fmt.Errorf("%s is %s", p, kind(typ))
		}
		t.Files++
		t.Bytes += size
		if t.Files > MaxAppFiles {
			return fmt.Errorf("more than %d files", MaxAppFiles)
		}
		if t.Bytes > MaxAppBytes {
			return fmt.Errorf("more than %d MiB", MaxAppBytes>>20)
		}
		return nil
	})
}

// FS is the tree as its image gets it: dot files and __pycache__ left
// out, every name opened through the tree's os.Root.
func (t *Tree) FS() fs.FS { return copied{t.root.FS()} }

// Has is whether the tree holds the file name (its module).
func (t *Tree) Has(name string) bool {
	st, err := t.root.Stat(name)
	return err == nil && st.Mode().IsRegular()
}

// Close closes the tree's root.
func (t *Tree) Close() error { return t.root.Close() }

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
	fh, err := r.Open(rel)
	if err != nil {
		return nil, plainErr(err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is over %d KiB", rel, max>>10)
	}
	return b, nil
}

// kind names a file type in words.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
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
