package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Labels every lab container carries, besides Label itself. A session is
// one series: one process of the test binary (or a command) on one host.
const (
	LabelSeries    = Label + ".series"
	LabelPID       = Label + ".pid"
	LabelHost      = Label + ".host"
	LabelBoot      = Label + ".boot"
	LabelRole      = Label + ".role"
	LabelCondition = Label + ".condition"
	LabelRun       = Label + ".run"
)

// Session is one series' identity on the engine. Every container it starts
// carries its labels and a readable name (series, condition, run, role),
// so Purge removes exactly its containers (on a signal, a timeout or at the
// end) and Reap, at a later start, can tell a dead series' leftovers from a
// live series' containers, which it never touches.
type Session struct {
	// ID names the series: s<UTC time>-<4 random hex digits>.
	ID string
	// PID, Host and Boot locate the process that owns the series; Boot is
	// the kernel's boot id, so a PID reused after a reboot is not mistaken
	// for the owner.
	PID  int
	Host string
	Boot string

	pool *dockertest.Pool
	// closed is set by Purge: no container may start after it.
	closed atomic.Bool
	// mu guards creating, the containers (and volumes) being created now:
	// Purge waits for them, so each is either listed by Purge or removed
	// by its creator, never neither.
	mu       sync.Mutex
	creating int
	// Trace, when set, is told of each step of a container's life
	// ("create app <condition> r<k>", "created ...", "remove ..."): the
	// leak test signals a series at each of them.
	Trace func(event string)
	// OnStop, when set, is called by Guard on a signal before it purges:
	// the series writes its reports.
	OnStop func()
	oom    oomWatch
	// tls is the series' certificate authority (tls.go).
	tls sessionCA
	// live holds the ids of the containers this process started and has
	// not removed yet: the lab's share of the host's CPU (package safety).
	live sync.Map
}

// ContainerIDs lists the session's live containers.
func (s *Session) ContainerIDs() []string {
	var ids []string
	s.live.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
	return ids
}

// NewSession starts a series on pool's engine.
func NewSession(pool *dockertest.Pool) (*Session, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	s := &Session{ID: "s" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:]),
		PID: os.Getpid(), Host: host, Boot: bootID(), pool: pool}
	if err := s.watchOOM(); err != nil {
		return nil, fmt.Errorf("stack: watch the engine's OOM events: %w", err)
	}
	return s, nil
}

// Pool is the engine the session runs on.
func (s *Session) Pool() *dockertest.Pool { return s.pool }

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// labels are a container's labels in this session.
func (s *Session) labels(role, condition string, run int) map[string]string {
	return map[string]string{Label: "1", LabelSeries: s.ID, LabelPID: strconv.Itoa(s.PID), LabelHost: s.Host,
		LabelBoot: s.Boot, LabelRole: role, LabelCondition: condition, LabelRun: strconv.Itoa(run)}
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// name is a container's name: wsgilab-<series>-<condition>-r<run>-<role>.
func (s *Session) name(role, condition string, run int) string {
	return unsafeName.ReplaceAllString(fmt.Sprintf("%s-%s-%s-r%d-%s", Label, s.ID, condition, run, role), "_")
}

// Purge force-removes every container and volume of this session and
// returns how many containers it removed. It is what a signal handler or
// a deadline calls; it takes at most about 3 × DefaultPurgeWait. It closes
// the session first, so nothing new starts, and waits for the containers
// being created at that moment: each creator sees the session closed and
// removes its own (Session.create). Only then does it list what is left,
// so a container started mid-purge is never missed, and it returns only
// once none is listed (purge), even one a test's own cleanup was removing
// at that moment.
func (s *Session) Purge() (int, error) {
	s.mu.Lock()
	s.closed.Store(true)
	s.mu.Unlock()
	waitErr := s.waitCreating(DefaultPurgeWait)
	filter := map[string][]string{"label": {LabelSeries + "=" + s.ID}}
	n, err := purge(s.pool.Client, filter)
	return n, errors.Join(waitErr, err, purgeVolumes(s.pool.Client, filter, nil))
}

// waitCreating waits, at most wait, until no container of the session is
// being created.
func (s *Session) waitCreating(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		s.mu.Lock()
		n := s.creating
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stack: %d container(s) still being created after %v", n, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// create runs start, which creates one object of the session (a container,
// or a volume), unless the session is closed; undo removes the object
// when the session was closed while start ran. Purge waits for every
// create in flight, so no object outlives a purge.
func (s *Session) create(what string, start func() (string, error), undo func(id string)) (string, error) {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return "", fmt.Errorf("stack: series %s is stopping; no %s starts", s.ID, what)
	}
	s.creating++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.creating--
		s.mu.Unlock()
	}()
	s.trace("create " + what)
	id, err := start()
	if err != nil {
		return "", err
	}
	s.trace("created " + what)
	if s.closed.Load() { // purged while this one was being created
		undo(id)
		return "", fmt.Errorf("stack: series %s is stopping; removed the %s it was starting", s.ID, what)
	}
	return id, nil
}

func (s *Session) trace(event string) {
	if s.Trace != nil {
		s.Trace(event)
	}
}

// purgeVolumes removes the volumes filters select (stack.KubePod's, once
// their containers are gone) for which keep, when set, says false.
func purgeVolumes(client *dc.Client, filters map[string][]string, keep func(labels map[string]string) bool) error {
	ctx, cancel := contextWithTimeout(DefaultPurgeWait)
	defer cancel()
	vols, err := client.ListVolumes(dc.ListVolumesOptions{Filters: filters, Context: ctx})
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vols {
		if keep != nil && keep(v.Labels) {
			continue
		}
		if err := client.RemoveVolumeWithOptions(dc.RemoveVolumeOptions{Context: ctx, Name: v.Name, Force: true}); err != nil && !errors.Is(err, dc.ErrNoSuchVolume) {
			errs = append(errs, fmt.Errorf("stack: remove volume %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Closed is whether the session was purged: it starts nothing more.
func (s *Session) Closed() bool { return s.closed.Load() }

// DefaultPurgeWait bounds one removal.
const DefaultPurgeWait = 30 * time.Second

// purge removes every container filters select and returns once none is
// listed, at most DefaultPurgeWait: a container another goroutine is
// removing at the same moment (Docker answers 409, removal already in
// progress) is waited for, since that removal may yet be cut short by the
// process's exit. It returns how many it removed itself.
func purge(client *dc.Client, filters map[string][]string) (int, error) {
	deadline := time.Now().Add(DefaultPurgeWait)
	n := 0
	for {
		cs, err := client.ListContainers(dc.ListContainersOptions{All: true, Filters: filters})
		if err != nil {
			return n, err
		}
		if len(cs) == 0 {
			return n, nil
		}
		var errs []error
		for _, c := range cs {
			switch err := removeContainer(client, c.ID); {
			case err == nil:
				n++
			case !removalInProgress(err):
				errs = append(errs, err)
			}
		}
		if time.Now().After(deadline) {
			return n, errors.Join(append(errs, fmt.Errorf("stack: %d container(s) still there after %v", len(cs), DefaultPurgeWait))...)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removalInProgress is Docker's answer to removing a container that is
// being removed already.
func removalInProgress(err error) bool {
	var de *dc.Error
	return errors.As(err, &de) && de.Status == 409 && strings.Contains(de.Message, "already in progress")
}

func removeContainer(client *dc.Client, id string) error {
	ctx, cancel := contextWithTimeout(DefaultPurgeWait)
	defer cancel()
	err := client.RemoveContainer(dc.RemoveContainerOptions{ID: id, Force: true, RemoveVolumes: true, Context: ctx})
	var gone *dc.NoSuchContainer
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("stack: remove container %s: %w", id[:12], err)
	}
	return nil
}

// Reaped is a dead series whose containers Reap removed.
type Reaped struct {
	Series     string
	Containers int
	// Why says how the series was judged dead.
	Why string
}

// Reap removes the containers of every series on the engine whose owner
// is dead: a process gone from this host (or from this boot), or a
// container without a series label, left by a lab from before sessions.
// A live series' containers, this one's included, are never touched.
func (s *Session) Reap() ([]Reaped, error) {
	cs, err := s.pool.Client.ListContainers(dc.ListContainersOptions{All: true,
		Filters: map[string][]string{"label": {Label}}})
	if err != nil {
		return nil, err
	}
	bySeries := map[string][]dc.APIContainers{}
	for _, c := range cs {
		bySeries[c.Labels[LabelSeries]] = append(bySeries[c.Labels[LabelSeries]], c)
	}
	var out []Reaped
	var errs []error
	keys := make([]string, 0, len(bySeries))
	for k := range bySeries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, series := range keys {
		group := bySeries[series]
		if series == s.ID {
			continue
		}
		dead, why := s.dead(group[0].Labels)
		if !dead {
			continue
		}
		r := Reaped{Series: series, Why: why}
		for _, c := range group {
			if err := removeContainer(s.pool.Client, c.ID); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Containers++
		}
		out = append(out, r)
	}
	// A dead series' volumes go too, once its containers are gone.
	errs = append(errs, purgeVolumes(s.pool.Client, map[string][]string{"label": {Label}}, func(l map[string]string) bool {
		dead, _ := s.dead(l)
		return l[LabelSeries] == s.ID || !dead
	}))
	return out, errors.Join(errs...)
}

// dead judges a series by its labels. A series owned by another host is
// alive unless it is ours to judge: only this host can see its processes.
func (s *Session) dead(l map[string]string) (bool, string) {
	if l[LabelSeries] == "" {
		return true, "no series label: left by a lab from before sessions"
	}
	if l[LabelHost] != s.Host {
		return false, ""
	}
	if l[LabelBoot] != s.Boot {
		return true, "its host has rebooted since"
	}
	pid, err := strconv.Atoi(l[LabelPID])
	if err != nil || pid <= 0 {
		return true, fmt.Sprintf("no owner pid (%q)", l[LabelPID])
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return true, fmt.Sprintf("its process %d is gone", pid)
	}
	return false, ""
}
