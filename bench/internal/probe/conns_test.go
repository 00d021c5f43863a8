package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// series adds samples socket samples of n queued sockets each to a new
// series, as a run of 30 s at the default interval does.
func series(samples, n int) Series {
	var s Series
	for range samples {
		ss := SocketSample{Hops: map[Hop]QueueBytes{HopAppToClient: {Conns: n, SendQ: int64(n)}}}
		for i := range n {
			ss.Conns = append(ss.Conns, Conn{Hop: HopAppToClient, LocalPort: 8000, RemotePort: 40000 + i, SendQ: 1})
		}
		s.addSockets(ss)
	}
	return s
}

func kept(s Series) (samples, records int) {
	for _, ss := range s.Sockets {
		if ss.Conns != nil {
			samples++
			records += len(ss.Conns)
		}
	}
	return samples, records
}

// A series keeps every socket sample whole under article A's loads, the
// matrix's 16 clients and make test's 256 readers (512 queued sockets);
// past ConnsPerSample it keeps one sample in 1 + n/ConnsPerSample, and
// never more than MaxConnRecords in all: 1,024 readers behind a proxy
// (about 4,000 queued sockets) for 30 s kept 2.4 million records and the
// sampler was OOM-killed. Every sample keeps its hops' sums.
func TestSeriesBoundsItsConnRecords(t *testing.T) {
	for _, tc := range []struct {
		name            string
		samples, n      int // 600: 30 s at 50 ms
		every           int // a sample kept whole every so many
		budgetCutsShort bool
	}{
		{"article-a", 600, 4, 1, false},
		{"matrix-16-behind-a-proxy", 600, 64, 1, false},
		{"make-test-256-readers", 600, 512, 1, false},
		{"1024-readers-direct", 600, 2048, 3, false},
		{"1024-readers-behind-a-proxy", 600, 4096, 5, false},
		{"the-probe's-longest-run", 2400, 4096, 5, true},
		{"past-max-conns", 600, MaxConns + 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples := tc.samples
			s := series(samples, tc.n)
			assert.Len(t, s.Sockets, samples, "every sample kept, with its hops' sums")
			for _, ss := range s.Sockets {
				assert.Equal(t, tc.n, ss.Hops[HopAppToClient].Conns)
			}
			n, records := kept(s)
			assert.LessOrEqual(t, records, MaxConnRecords)
			assert.Equal(t, samples-n, s.ConnsOmitted)
			switch {
			case tc.every == 0:
				assert.Zero(t, n)
			case tc.budgetCutsShort:
				assert.Equal(t, MaxConnRecords/tc.n, n, "kept until the budget")
				assert.Less(t, n, (samples+tc.every-1)/tc.every)
			default:
				assert.Equal(t, (samples+tc.every-1)/tc.every, n)
				assert.NotNil(t, s.Sockets[0].Conns)
			}
		})
	}
}
