package probe

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProc builds <root>/<pid>/fd/<n> symlinks with the given link texts.
func fakeProc(t *testing.T, fds map[int]map[int]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, links := range fds {
		dir := filepath.Join(root, strconv.Itoa(pid), "fd")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for fd, target := range links {
			require.NoError(t, os.Symlink(target, filepath.Join(dir, strconv.Itoa(fd))))
		}
	}
	return root
}

func writeSized(t *testing.T, path string, size int) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, make([]byte, size), 0o600))
}

func TestTempFiles(t *testing.T) {
	tempDir := t.TempDir()
	outside := t.TempDir()
	a := filepath.Join(tempDir, "0000000001")
	b := filepath.Join(tempDir, "1", "0000000002")
	require.NoError(t, os.Mkdir(filepath.Dir(b), 0o755))
	// A file whose name really ends in " (deleted)": its link text is what
	// the kernel shows for an unlinked file, and the link still resolves,
	// so TempFiles runs exactly as on /proc.
	unlinked := filepath.Join(tempDir, "0000000003")
	writeSized(t, a, 100)
	writeSized(t, b, 250)
	writeSized(t, unlinked+deletedSuffix, 30)
	writeSized(t, filepath.Join(outside, "log"), 1000)

	procRoot := fakeProc(t, map[int]map[int]string{
		100: {
			3: a,
			4: b,
			5: filepath.Join(outside, "log"),
			6: "socket:[12345]",
			7: tempDir, // the directory itself is not a temp file
			8: a,       // second fd on the same file
		},
		200: {
			3: a, // the same file from another worker
			9: unlinked + deletedSuffix,
		},
	})

	got, err := TempFiles(procRoot, []int{100, 200, 300}, tempDir+"/")
	require.NoError(t, err, "pid 300 does not exist and is skipped")
	assert.Equal(t, TempFileUsage{
		TotalBytes: 380,
		FileCount:  3,
		Files: []TempFile{
			{Path: a, SizeBytes: 100},
			{Path: unlinked, SizeBytes: 30, Deleted: true},
			{Path: b, SizeBytes: 250},
		},
	}, got)

	none, err := TempFiles(procRoot, []int{100}, filepath.Join(tempDir, "nope"))
	require.NoError(t, err)
	assert.Equal(t, TempFileUsage{Files: []TempFile{}}, none)
}

// On the real /proc, stat through the fd link reaches an unlinked file.
func TestTempFilesRealProcSeesUnlinkedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "buf")
	writeSized(t, path, 4096)
	f1, err := os.Open(path)
	require.NoError(t, err)
	defer f1.Close()
	f2, err := os.Open(path)
	require.NoError(t, err)
	defer f2.Close()
	require.NoError(t, os.Remove(path))

	got, err := TempFiles("/proc", []int{os.Getpid()}, dir)
	require.NoError(t, err)
	assert.Equal(t, TempFileUsage{
		TotalBytes: 4096,
		FileCount:  1,
		Files:      []TempFile{{Path: path, SizeBytes: 4096, Deleted: true}},
	}, got)
}

func TestTempFilesNamesUnreadableFds(t *testing.T) {
	procRoot := t.TempDir()
	// An fd entry that is a file, not a link: Readlink fails with EINVAL.
	dir := filepath.Join(procRoot, "100", "fd")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "3"), nil, 0o600))
	_, err := TempFiles(procRoot, []int{100}, "/tmp")
	assert.ErrorContains(t, err, filepath.Join(dir, "3"))
}

func TestIsUnder(t *testing.T) {
	assert.True(t, isUnder("/var/lib/nginx/proxy/1/00/0000000001", "/var/lib/nginx/proxy"))
	assert.False(t, isUnder("/var/lib/nginx/proxy", "/var/lib/nginx/proxy"))
	assert.False(t, isUnder("/var/lib/nginx/proxy2/x", "/var/lib/nginx/proxy"))
	assert.False(t, isUnder("/var/lib/nginx/x", "/var/lib/nginx/proxy"))
	assert.False(t, isUnder("pipe:[4]", "/"))
	assert.True(t, isUnder("/tmp/x", "/"))
}

// A proc root that does not exist is an error, not a namespace of gone
// processes.
func TestTempFilesNeedsAProcRoot(t *testing.T) {
	_, err := TempFiles(filepath.Join(t.TempDir(), "nope"), []int{1}, "/tmp")
	assert.ErrorContains(t, err, "nope")
}

// The sampler reads the temp files of NGINX's workers, not its master's.
func TestSampledSkipsNginxMaster(t *testing.T) {
	procs := []ProcessInfo{
		{Process: Process{PID: 10}, Role: "app"},
		{Process: Process{PID: 11, PPID: 10}, Role: "app", Worker: true},
		{Process: Process{PID: 20}, Role: "proxy"},
		{Process: Process{PID: 21, PPID: 20}, Role: "proxy", Worker: true},
		{Process: Process{PID: 22, PPID: 20}, Role: "proxy", Worker: true, gone: true},
		{Process: Process{PID: 30}, Role: "client"},
	}
	rolePID, workers, nginx := sampled(procs)
	assert.Equal(t, map[string]int{"app": 10, "proxy": 20, "client": 30}, rolePID)
	assert.Equal(t, []int{10, 11, 20, 21}, workers)
	assert.Equal(t, []int{21}, nginx)
}
