package stack

import (
	"sync"

	dc "github.com/ory/dockertest/v3/docker"
)

// oomWatch remembers the session's containers the engine sent an "oom"
// event for. Docker 20.10 sets State.OOMKilled only when a container
// exits, so a server whose master survives while the kernel kills a
// worker shows nothing in its state; the event arrives either way.
type oomWatch struct {
	mu  sync.Mutex
	ids map[string]bool
}

// watchOOM subscribes to the engine's events for the process' lifetime and
// records every "oom" of a container of this session.
func (s *Session) watchOOM() error {
	s.oom.ids = map[string]bool{}
	ch := make(chan *dc.APIEvents, 256)
	if err := s.pool.Client.AddEventListener(ch); err != nil {
		return err
	}
	go func() {
		for ev := range ch {
			if ev == nil || (ev.Action != "oom" && ev.Status != "oom") || ev.Actor.Attributes[LabelSeries] != s.ID {
				continue
			}
			id := ev.Actor.ID
			if id == "" {
				id = ev.ID
			}
			s.oom.mu.Lock()
			s.oom.ids[id] = true
			s.oom.mu.Unlock()
		}
	}()
	return nil
}

// sawOOM is whether the engine reported an OOM kill in container id.
func (s *Session) sawOOM(id string) bool {
	s.oom.mu.Lock()
	defer s.oom.mu.Unlock()
	return s.oom.ids[id]
}
