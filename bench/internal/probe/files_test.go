package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilesRereadsKeptOpen shows what the sampler relies on, on this
// kernel: a process's task directory and a thread's files, kept open, give
// the current state at each read (comm changes at exec), and a process that
// exits answers with an error gone() knows, after which its files are
// forgotten.
func TestFilesRereadsKeptOpen(t *testing.T) {
	f := newFiles()
	t.Cleanup(f.Close)
	cmd := exec.Command("sh", "-c", "read x; exec sleep 10")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	task := fmt.Sprintf("/proc/%d/task", pid)
	comm := fmt.Sprintf("%s/%d/comm", task, pid)

	tids, err := f.threads(task)
	require.NoError(t, err)
	assert.Equal(t, []int{pid}, tids)
	b, err := f.read(comm)
	require.NoError(t, err)
	assert.Equal(t, "sh\n", string(b))

	_, err = stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		b, err := f.read(comm)
		return err == nil && string(b) == "sleep\n"
	}, 2*time.Second, 10*time.Millisecond, "the same open file shows the comm after exec")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	_, err = f.read(comm)
	assert.True(t, gone(err), "an exited process's kept file: %v", err)
	assert.NotContains(t, f.open, comm, "is forgotten")
	_, err = f.threads(task)
	assert.True(t, gone(err), "its kept task directory: %v", err)
	assert.Empty(t, f.open)

	_, err = f.read("/proc/self/stat")
	require.NoError(t, err)
	f.sweep() // this tick read it
	assert.Len(t, f.open, 1)
	f.sweep() // the next did not
	assert.Empty(t, f.open)
}

// TestFilesReadsRegularFiles: the fixture trees are plain files, read the
// same way, content changes included.
func TestFilesReadsRegularFiles(t *testing.T) {
	f := newFiles()
	t.Cleanup(f.Close)
	p := filepath.Join(t.TempDir(), "cpu.stat")
	require.NoError(t, os.WriteFile(p, []byte("usage_usec 10\n"), 0o644))
	b, err := f.read(p)
	require.NoError(t, err)
	assert.Equal(t, "usage_usec 10\n", string(b))
	require.NoError(t, os.WriteFile(p, []byte("usage_usec 2000\n"), 0o644))
	b, err = f.read(p)
	require.NoError(t, err)
	assert.Equal(t, "usage_usec 2000\n", string(b))

	ok, err := f.exists(filepath.Join(filepath.Dir(p), "cgroup.controllers"))
	require.NoError(t, err)
	assert.False(t, ok)
}

// A sampler's files list a kept directory anew at every tick: the tasks
// and the temp files of a live process are the same at the third reading
// as at the first.
func TestFilesListKeptDirectoriesAgain(t *testing.T) {
	dir := t.TempDir()
	tmp, err := os.CreateTemp(dir, "buf")
	require.NoError(t, err)
	defer tmp.Close()
	_, err = tmp.Write(make([]byte, 1234))
	require.NoError(t, err)
	f := newFiles()
	defer f.Close()
	task := filepath.Join("/proc", strconv.Itoa(os.Getpid()), "task")
	first, err := f.threads(task)
	require.NoError(t, err)
	require.NotEmpty(t, first)
	for range 3 {
		tids, err := f.threads(task)
		require.NoError(t, err)
		assert.Contains(t, tids, first[0], "the main thread is listed again")
		u, err := f.tempFiles("/proc", []int{os.Getpid()}, dir)
		require.NoError(t, err)
		assert.Equal(t, 1, u.FileCount, "the open file is found again")
		assert.EqualValues(t, 1234, u.TotalBytes)
		f.sweep()
	}
}

// A thread's name is read once until forget: the name read first stands
// in between.
func TestThreadNameReadOncePerListing(t *testing.T) {
	dir := t.TempDir()
	comm := filepath.Join(dir, "comm")
	require.NoError(t, os.WriteFile(comm, []byte("gunicorn\n"), 0o644))
	f := newFiles()
	defer f.Close()
	name, err := f.threadName(dir)
	require.NoError(t, err)
	assert.Equal(t, "gunicorn", name)
	require.NoError(t, os.WriteFile(comm, []byte("renamed\n"), 0o644))
	name, err = f.threadName(dir)
	require.NoError(t, err)
	assert.Equal(t, "gunicorn", name, "kept until the next listing")
	f.forget()
	name, err = f.threadName(dir)
	require.NoError(t, err)
	assert.Equal(t, "renamed", name, "read again after it")
	(*files)(nil).forget() // a nil files keeps nothing to forget
}

// fdCount sorts a process's descriptors by what they reach, in a fixture
// tree standing in for /proc: links to sockets, to paths (a deleted temp
// file too) and to pipes and anonymous inodes.
func TestFDCountByKind(t *testing.T) {
	root := t.TempDir()
	fd := filepath.Join(root, "42", "fd")
	require.NoError(t, os.MkdirAll(fd, 0o755))
	for name, link := range map[string]string{
		"0": "/dev/null", "3": "socket:[1234]", "4": "socket:[1235]", "5": "pipe:[99]", "6": "anon_inode:[eventfd]",
		"7": "anon_inode:[eventpoll]", "8": "/tmp/nginx-proxy/0000000001 (deleted)", "9": "/srv/wsgiapp/app.py",
	} {
		require.NoError(t, os.Symlink(link, filepath.Join(fd, name)))
	}
	for _, f := range []*files{nil, newFiles()} {
		k, err := f.fdCount(root, []int{42, 43}) // 43 has exited
		require.NoError(t, err)
		assert.Equal(t, FDKinds{Sockets: 2, Files: 3, Other: 3}, k)
		assert.Equal(t, 8, k.Total())
	}
	assert.Equal(t, 5, FDSample{FDs: 8, Sockets: 2, Files: 3}.Held())
}

// Past MaxSortedFDs a sample's descriptors are counted, not sorted, and
// the sample says so.
func TestFDCountUnsortedPastItsBound(t *testing.T) {
	root := t.TempDir()
	for pid, n := range map[string]int{"1": 2, "2": MaxSortedFDs} {
		fd := filepath.Join(root, pid, "fd")
		require.NoError(t, os.MkdirAll(fd, 0o755))
		for i := range n {
			require.NoError(t, os.Symlink("socket:[1]", filepath.Join(fd, strconv.Itoa(i))))
		}
	}
	k, err := newFiles().fdCount(root, []int{1, 2})
	require.NoError(t, err)
	assert.Equal(t, FDKinds{Other: MaxSortedFDs + 2}, k)
	assert.False(t, FDSample{FDs: k.Total(), Sockets: k.Sockets, Files: k.Files}.Classified())
	k, err = newFiles().fdCount(root, []int{1})
	require.NoError(t, err)
	assert.Equal(t, FDKinds{Sockets: 2}, k)
}
