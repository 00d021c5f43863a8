package podspec

import "fmt"

// Hardening locks one role's container down. Every role drops every
// capability except CapAdd, runs with no-new-privileges (no setuid binary
// can raise it again), on a read-only root filesystem with Tmpfs as its
// only writable paths, and under a pids limit, so a fork bomb or a thread
// leak in a server ends as a failed fork, not as a frozen machine.
type Hardening struct {
	// User runs the role's main process and every exec in it, as
	// "uid:gid"; empty keeps the image's root.
	User string `json:"user,omitempty"`
	// CapAdd are the only capabilities kept; the rest are dropped.
	CapAdd []string `json:"cap_add,omitempty"`
	// Tmpfs are the writable paths, path → mount options. tmpfs pages
	// count against the container's memory limit.
	Tmpfs map[string]string `json:"tmpfs,omitempty"`
	// PidsLimit bounds processes and threads together.
	PidsLimit int64 `json:"pids_limit"`
	// Why says why the role needs what it keeps.
	Why string `json:"why"`
}

// OpenFiles is every role's open-file limit (RLIMIT_NOFILE, soft and
// hard): pinned, so that a step of 10,000 held connections (a client's
// 10,000 sockets and a few; a server's share) meets the servers' own
// limits, not whatever the Docker daemon hands down (1,024 soft on some
// hosts). It stays under the daemon's own hard limit, which a container
// cannot exceed without CAP_SYS_RESOURCE on the host: 20,000 on the lab's
// machines. A Kubernetes pod cannot set it: its containers get their
// runtime's.
const OpenFiles = 16384

// Nobody is Debian's unprivileged user and group.
const Nobody = "65534:65534"

// Roles of a pod, as stack labels its containers.
const (
	RoleApp     = "app"
	RoleProxy   = "proxy"
	RoleClient  = "client"
	RoleSampler = "sampler"
	RoleHop     = "hop"
	RoleSetup   = "versions"
)

// ProxyTmpfsBytes sizes NGINX's /tmp: its config, pid file and temp
// paths. A buffered download may spill proxy_max_temp_file_size (32 MiB)
// to disk, two downloads run at once, and 16 MiB more leaves room for the
// client-body path and the config. Article A measured 25.2 MiB of open
// temp files at the peak. With NGINX's own few MiB this stays under the
// proxy's 96 MiB memory limit, which tmpfs pages count against.
const ProxyTmpfsBytes = 2*32<<20 + 16<<20

// DefaultHardening is each role's lockdown; stack applies it to every
// container it starts.
var DefaultHardening = map[string]Hardening{
	RoleApp: {User: Nobody, PidsLimit: 256, Tmpfs: map[string]string{"/tmp": "rw,nosuid,nodev,size=32m,mode=1777"},
		Why: "the WSGI server binds 127.0.0.1:8000 (no privileged port) and writes only /tmp (the write log and Gunicorn's worker heartbeat files) and, for waitress's spilled output buffers and the request bodies Twisted spools under Daphne, the container's own /dev/shm (ShmTempDir). 256 pids leave room for 2 workers x 4 threads, uWSGI's threads and an exec or two."},
	RoleProxy: {User: Nobody, PidsLimit: 128, Tmpfs: map[string]string{"/tmp": fmt.Sprintf("rw,exec,nosuid,nodev,size=%dm,mode=1777", ProxyTmpfsBytes>>20)},
		Why: "NGINX listens on 127.0.0.1:8080 and writes its config, pid file and temp files under /tmp (ProxyTmpfsBytes); as non-root its master cannot and need not switch users. The other front doors (package proxy) write only there too; it is exec because Varnish compiles its VCL into a shared object in its state directory there and loads it (Docker mounts a tmpfs noexec unless told, and dlopen then fails). 128 pids: Apache's event MPM at Debian's packaged settings starts 2 processes of 25 worker threads plus listeners (at 32 it could not create its threads and exited)."},
	RoleClient: {User: Nobody, PidsLimit: 256, Tmpfs: map[string]string{"/tmp": "rw,nosuid,nodev,size=16m,mode=1777"},
		Why: "holds the pod's namespaces with `sleep` under docker-init, as a pause container does (the TCP sysctls are set by the engine at its creation, not by a process); the load generators (labagent, ab), exec'd into it, only connect to loopback; /tmp is there for tools that expect it."},
	RoleSampler: {CapAdd: []string{"SYS_PTRACE", "DAC_READ_SEARCH"}, PidsLimit: 64, Tmpfs: map[string]string{"/tmp": "rw,nosuid,nodev,size=1m,mode=1777"},
		Why: "reads the other roles' /proc: SYS_PTRACE for their fd links, wchan and io, DAC_READ_SEARCH to list /proc/PID/fd of processes owned by nobody. It stays root because Docker gives added capabilities to root only. /tmp holds the start and stop marks of each sampling."},
	RoleHop: {User: Nobody, PidsLimit: 64, Tmpfs: map[string]string{"/tmp": "rw,nosuid,nodev,size=1m,mode=1777"},
		Why: "relays the pod's hops through Toxiproxy (labagent hop) in user space, listening on loopback ports above 1024: it needs no capability, where netem would need NET_ADMIN. It writes nothing; /tmp is there for tools that expect it. 64 pids: one Go process and an exec or two."},
	RoleSetup: {User: Nobody, PidsLimit: 32,
		Why: "prints the components' versions once, offline, and exits."},
}
