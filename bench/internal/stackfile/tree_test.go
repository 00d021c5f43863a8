package stackfile

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stackDir writes a stack directory: stack.yaml naming app.dir "src",
// src/shop.py, and whatever extra does to it; it returns the directory and
// a secret file beside it, outside the directory.
func stackDir(t *testing.T, extra func(dir, secret string)) (string, string) {
	t.Helper()
	top := t.TempDir()
	secret := filepath.Join(top, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("TOKEN=not-for-the-image\n"), 0o600))
	dir := filepath.Join(top, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "shop.py"), []byte("app = None\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stack.yaml"), []byte(`name: shop
app: {dir: src, module: shop:app, server: [gunicorn]}
paths: {fast: {path: /healthz}}
requires: {silent_connections: 1}
`), 0o644))
	if extra != nil {
		extra(dir, secret)
	}
	return dir, secret
}

// A stack directory is untrusted input: every way out of it, and every
// file that is no plain file, is refused by Load with the field and the
// name, before anything starts.
func TestTreeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra func(dir, secret string)
		want  string
	}{
		{"link to a file outside", func(dir, secret string) {
			require.NoError(t, os.Symlink(secret, filepath.Join(dir, "src", "config.txt")))
		}, `app.dir "src": want only files, directories and links to files inside it, at most 2000 files and directories and 32 MiB (a stack directory is untrusted input): config.txt is a link that leaves the directory`},
		{"relative link out", func(dir, secret string) {
			require.NoError(t, os.Symlink("../../secret.txt", filepath.Join(dir, "src", "config.txt")))
		}, "config.txt is a link that leaves the directory"},
		{"link to a directory", func(dir, _ string) {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "src", "pkg"), 0o755))
			require.NoError(t, os.Symlink("pkg", filepath.Join(dir, "src", "alias")))
		}, "alias is a link to a directory, not to a file"},
		{"named pipe", func(dir, _ string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "src", "pipe"), 0o644))
		}, "pipe is a named pipe"},
		{"too many files", func(dir, _ string) {
			for i := range MaxAppFiles {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "f"+strconv.Itoa(i)), nil, 0o644))
			}
		}, "more than 2000 files and directories"},
		{"too many bytes", func(dir, _ string) {
			f, err := os.Create(filepath.Join(dir, "src", "big.bin"))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(MaxAppBytes)) // with shop.py, one byte over
			require.NoError(t, f.Close())
		}, "more than 32 MiB"},
		{"app.dir a link out", func(dir, secret string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "src")))
			require.NoError(t, os.Symlink(filepath.Dir(secret), filepath.Join(dir, "src")))
		}, `app.dir "src": want a directory that exists inside the stack file's directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := stackDir(t, tc.extra)
			_, err := Load(filepath.Join(dir, "stack.yaml"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "not-for-the-image", "the error never shows what it refused to read")
		})
	}
}

// What an app directory's image gets: its files, a link to a file inside
// it as that file, no dot file and no bytecode, read once when it was
// checked: a link swapped in afterwards changes nothing of the copy.
func TestTreeCopiesOnlyWhatWasChecked(t *testing.T) {
	dir, secret := stackDir(t, func(dir, _ string) {
		src := filepath.Join(dir, "src")
		require.NoError(t, os.MkdirAll(filepath.Join(src, "pkg", "__pycache__"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "pkg", "__init__.py"), nil, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(src, "pkg", "__pycache__", "x.pyc"), []byte("x"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(src, ".env"), []byte("SECRET=1"), 0o644))
		require.NoError(t, os.Symlink("shop.py", filepath.Join(src, "alias.py")))
	})
	f, err := Load(filepath.Join(dir, "stack.yaml"))
	require.NoError(t, err)
	tree, err := f.OpenApp()
	require.NoError(t, err)
	assert.Equal(t, 4, tree.Entries, "alias.py, pkg, pkg/__init__.py, shop.py")
	files := tree.Files()
	assert.ElementsMatch(t, []string{"alias.py", "pkg/__init__.py", "shop.py"}, slices.Collect(maps.Keys(files)))

	// Swapped for a link out after the check: the copy holds the bytes
	// that were checked.
	require.NoError(t, os.Remove(filepath.Join(dir, "src", "alias.py")))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "src", "alias.py")))
	assert.Equal(t, "app = None\n", string(tree.Files()["alias.py"]))
	again, err := f.OpenApp()
	require.NoError(t, err)
	assert.Equal(t, "app = None\n", string(again.Files()["alias.py"]), "the file keeps the tree Load checked: read once")
	_, err = Load(filepath.Join(dir, "stack.yaml"))
	require.Error(t, err, "a new read refuses the link")
}

// A pipe put where a file was is refused, not read: reading one would
// block the check for ever.
func TestTreeNeverBlocksOnAPipe(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "shop.py"), 0o644))
	r, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer r.Close()
	_, err = readFile(r, "shop.py", MaxAppBytes, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shop.py is a named pipe, not a file")
}

// The stack file itself is read only as a regular file: a link, whose
// target could be any file of the machine, or a device, is refused
// without reading it.
func TestStackFileItself(t *testing.T) {
	dir, secret := stackDir(t, nil)
	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.Symlink(secret, link))
	_, err := Load(link)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a symbolic link: want the stack file itself, a regular file")
	assert.NotContains(t, err.Error(), "not-for-the-image")
	_, err = Load("/dev/zero")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/dev/zero is a device")
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o644))
	_, err = Load(big)
	assert.ErrorContains(t, err, "is over 64 KiB")
}

// proxy.config is read inside the directory too.
func TestConfigStaysInside(t *testing.T) {
	dir, secret := stackDir(t, func(dir, secret string) {
		require.NoError(t, os.Symlink(secret, filepath.Join(dir, "nginx.conf")))
		b, err := os.ReadFile(filepath.Join(dir, "stack.yaml"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "stack.yaml"), append(b, "proxy: {mode: custom, config: nginx.conf}\n"...), 0o644))
	})
	_, err := Load(filepath.Join(dir, "stack.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `proxy.config "nginx.conf": want an NGINX config file of at most 256 KiB that exists inside the stack file's directory`)
	_, err = readInside(dir, "../"+filepath.Base(filepath.Dir(secret))+"/secret.txt", MaxConfigBytes)
	assert.Error(t, err)
}
