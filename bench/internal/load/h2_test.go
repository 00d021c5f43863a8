package load

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"golang.org/x/net/http2/hpack"

	"wsgilab/bench/internal/tlsca"
)

// h2Update is a WINDOW_UPDATE the raw server received.
type h2Update struct {
	at     time.Time
	stream uint32
	inc    uint32
}

// h2Seen is what the raw HTTP/2 server saw of its one client.
type h2Seen struct {
	mu      sync.Mutex
	window  int64 // the client's SETTINGS_INITIAL_WINDOW_SIZE
	streams []uint32
	ids     []string // each request's x-lab-id
	updates []h2Update
	first   time.Time // the first DATA frame sent
}

// rawH2Server is a cleartext HTTP/2 listener written with the Framer
// alone: it advertises maxStreams (0: no limit), answers each request
// with a 200 and body bytes of zeros, sending DATA as far as the client's
// windows allow, and records the client's settings, requests and window
// updates. It serves one connection.
func rawH2Server(t *testing.T, body int64, maxStreams uint32) (string, *h2Seen) {
	seen := &h2Seen{window: 65535}
	addr := rawServer(t, func(c *net.TCPConn) {
		defer c.Close()
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
			return
		}
		fr := http2.NewFramer(c, c)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		var settings []http2.Setting
		if maxStreams > 0 {
			settings = append(settings, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: maxStreams})
		}
		if fr.WriteSettings(settings...) != nil {
			return
		}
		// The reader copies out what the loop below reads: the Framer
		// reuses its buffers on its next read.
		type frame struct {
			typ         http2.FrameType
			stream, inc uint32
			ack         bool
			window      int64 // SETTINGS_INITIAL_WINDOW_SIZE, -1 when absent
			id          string
		}
		frames := make(chan frame)
		go func() {
			defer close(frames)
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				ev := frame{typ: f.Header().Type, stream: f.Header().StreamID, window: -1}
				switch f := f.(type) {
				case *http2.MetaHeadersFrame:
					for _, h := range f.Fields {
						if h.Name == "x-lab-id" {
							ev.id = h.Value
						}
					}
				case *http2.SettingsFrame:
					ev.ack = f.IsAck()
					if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
						ev.window = int64(v)
					}
				case *http2.WindowUpdateFrame:
					ev.inc = f.Increment
				default:
					continue
				}
				frames <- ev
			}
		}()
		connWin := int64(65535)
		left := map[uint32]int64{}   // body bytes still to send per stream
		window := map[uint32]int64{} // per stream
		var hbuf bytes.Buffer
		enc := hpack.NewEncoder(&hbuf)
		send := func() bool {
			for id, n := range left {
				for n > 0 && window[id] > 0 && connWin > 0 {
					k := min(n, window[id], connWin, 16<<10)
					if fr.WriteData(id, k == n, make([]byte, k)) != nil {
						return false
					}
					seen.mu.Lock()
					if seen.first.IsZero() {
						seen.first = time.Now()
					}
					seen.mu.Unlock()
					n -= k
					window[id] -= k
					connWin -= k
				}
				left[id] = n
				if n == 0 {
					delete(left, id)
				}
			}
			return true
		}
		for f := range frames {
			switch f.typ {
			case http2.FrameSettings:
				if f.ack {
					continue
				}
				if f.window >= 0 {
					seen.mu.Lock()
					seen.window = f.window
					seen.mu.Unlock()
				}
				if fr.WriteSettingsAck() != nil {
					return
				}
			case http2.FrameHeaders:
				id := f.stream
				seen.mu.Lock()
				seen.streams = append(seen.streams, id)
				seen.ids = append(seen.ids, f.id)
				window[id] = seen.window
				seen.mu.Unlock()
				hbuf.Reset()
				_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
				_ = enc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.FormatInt(body, 10)})
				if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true}) != nil {
					return
				}
				left[id] = body
			case http2.FrameWindowUpdate:
				seen.mu.Lock()
				seen.updates = append(seen.updates, h2Update{time.Now(), f.stream, f.inc})
				seen.mu.Unlock()
				if f.stream == 0 {
					connWin += int64(f.inc)
				} else {
					window[f.stream] += int64(f.inc)
				}
			}
			if !send() {
				return
			}
		}
	})
	return addr, seen
}

func h2Spec(addr, kind string, streams int) Spec {
	spec := NewSpec("http://"+addr, "t", WithDownloads(1), WithSlowKind(kind))
	spec.H2Streams, spec.FastCount = streams, 0
	return spec
}

// TestH2ReadPacesWindowUpdates: against a raw HTTP/2 listener, the slow
// HTTP/2 reader asks for a window of ReceiveBuffer bytes a stream and
// returns it at DownloadRate a stream from the first byte, so each
// stream's body takes LargeSize / DownloadRate and the server may never
// run more than a window ahead of the reader.
func TestH2ReadPacesWindowUpdates(t *testing.T) {
	const body, rate = 512 << 10, 1 << 20 // half a second a stream
	addr, seen := rawH2Server(t, body, 0)
	spec := h2Spec(addr, KindH2Read, 2)
	spec.LargeSize, spec.DownloadRate = body, rate
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, res.Downloads, 2)
	for i, d := range res.Downloads {
		assert.Equal(t, "t-dl1-s"+strconv.Itoa(i+1), d.ID)
		assert.Equal(t, OutcomeComplete, d.Outcome(), "%+v", d)
		assert.InDelta(t, 0.5, (d.Completion - d.FirstByte).Seconds(), 0.15, "read at DownloadRate from its first byte")
		assert.NotEmpty(t, d.Reads)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	assert.EqualValues(t, spec.ReceiveBuffer, seen.window, "the window asked for is ReceiveBuffer")
	assert.Equal(t, []uint32{1, 3}, seen.streams)
	assert.Equal(t, []string{"t-dl1-s1", "t-dl1-s2"}, seen.ids)
	// What each stream got back by time t stays within a window and a
	// read of DownloadRate x t: the server is never let further ahead.
	granted := map[uint32]int64{}
	slack := int64(spec.ReceiveBuffer + spec.ReadSize)
	for _, u := range seen.updates {
		if u.stream == 0 {
			continue
		}
		granted[u.stream] += int64(u.inc)
		allowed := int64(rate*u.at.Sub(seen.first).Seconds()) + slack
		assert.LessOrEqual(t, granted[u.stream], allowed, "stream %d's window at %v", u.stream, u.at.Sub(seen.first))
	}
	for _, id := range []uint32{1, 3} {
		assert.GreaterOrEqual(t, granted[id]+seen.window, int64(body), "stream %d was given its whole body", id)
	}
}

// TestH2ManyStreamsHoldsWithoutWindow: the many-streams client asks for
// a window of 0, opens as many streams as the server allows (the rest
// recorded as not opened), reads no body, and holds the streams to the
// end of its hold.
func TestH2ManyStreamsHoldsWithoutWindow(t *testing.T) {
	addr, seen := rawH2Server(t, 1<<20, 10)
	spec := h2Spec(addr, KindH2Streams, 16)
	spec.HoldFor = 300 * time.Millisecond
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, res.Downloads, 16)
	outcomes := map[string]int{}
	for _, d := range res.Downloads {
		outcomes[d.Outcome()]++
		assert.Zero(t, d.Bytes)
	}
	assert.Equal(t, map[string]int{OutcomeHeld: 10, OutcomeRefused: 6}, outcomes)
	assert.Equal(t, http.StatusOK, res.Downloads[0].Status, "its headers came")
	assert.InDelta(t, 0.3, res.Downloads[0].Completion.Seconds(), 0.1)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	assert.Zero(t, seen.window)
	assert.Len(t, seen.streams, 10)
	assert.Empty(t, seen.updates, "no window is ever returned")
}

// TestH2ReadAgainstGoServer: x/net's own HTTP/2 server (h2c, prior
// knowledge) serves the slow reader's streams whole.
func TestH2ReadAgainstGoServer(t *testing.T) {
	const body = 256 << 10
	ids := make(chan string, 4)
	srv := httptest.NewServer(h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids <- r.Header.Get("X-Lab-Id")
		w.Header().Set("Content-Length", strconv.Itoa(body))
		w.Write(make([]byte, body))
	}), &http2.Server{}))
	t.Cleanup(srv.Close)
	spec := NewSpec(srv.URL, "t", WithDownloads(1), WithSlowKind(KindH2Read))
	spec.LargeSize, spec.DownloadRate, spec.FastCount = body, 2<<20, 0
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, res.Downloads, DefaultH2Streams)
	for _, d := range res.Downloads {
		assert.Equal(t, OutcomeComplete, d.Outcome(), "%+v", d)
		assert.InDelta(t, 0.125, (d.Completion - d.FirstByte).Seconds(), 0.1)
	}
	assert.Len(t, ids, DefaultH2Streams)
}

// TestH2SpecValidate: the HTTP/2 clients' fields are checked, each named.
func TestH2SpecValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		kind string
		mod  func(*Spec)
		want string
	}{
		"no streams":   {KindH2Read, func(s *Spec) { s.H2Streams = 0 }, "H2Streams"},
		"many streams": {KindH2Streams, func(s *Spec) { s.H2Streams = MaxH2Streams + 1 }, "H2Streams"},
		"rate":         {KindH2Read, func(s *Spec) { s.DownloadRate = 0 }, "DownloadRate"},
		"window":       {KindH2Read, func(s *Spec) { s.ReceiveBuffer = 1 << 30 }, "ReceiveBuffer"},
		"hold":         {KindH2Streams, func(s *Spec) { s.HoldFor = 0 }, "HoldFor"},
	} {
		t.Run(name, func(t *testing.T) {
			s := h2Spec("127.0.0.1:1", tc.kind, 2)
			require.NoError(t, s.Validate())
			tc.mod(&s)
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestH2ReadOverTLS: on an https LargeURL the slow HTTP/2 reader asks
// ALPN for h2 under the spec's CA and reads its streams whole; a TLS
// server that speaks only HTTP/1.1 is refused by name, every stream
// recorded as not connected.
func TestH2ReadOverTLS(t *testing.T) {
	const body = 128 << 10
	ca, err := tlsca.New(0, "127.0.0.1")
	require.NoError(t, err)
	serve := func(h2 bool) string {
		conf, err := ca.ServerConfig()
		require.NoError(t, err)
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(body))
			w.Write(make([]byte, body))
		}))
		s.TLS, s.EnableHTTP2 = conf, h2
		s.Config.ErrorLog = log.New(io.Discard, "", 0)
		s.StartTLS()
		t.Cleanup(s.Close)
		return s.URL
	}
	spec := NewSpec(serve(true), "t", WithDownloads(1), WithSlowKind(KindH2Read))
	spec.CAPEM, spec.LargeSize, spec.DownloadRate, spec.FastCount = string(ca.CertPEM), body, 2<<20, 0
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, res.Downloads, DefaultH2Streams)
	for _, d := range res.Downloads {
		assert.Equal(t, OutcomeComplete, d.Outcome(), "%+v", d)
		assert.InDelta(t, 0.0625, (d.Completion - d.FirstByte).Seconds(), 0.05)
	}

	spec = NewSpec(serve(false), "t", WithDownloads(1), WithSlowKind(KindH2Read))
	spec.CAPEM, spec.LargeSize, spec.FastCount = string(ca.CertPEM), body, 0
	res, err = Run(context.Background(), spec)
	require.NoError(t, err)
	for _, d := range res.Downloads {
		assert.Contains(t, d.Error, `does not speak HTTP/2 over TLS: ALPN chose "http/1.1"`)
		assert.Equal(t, OutcomeRefused, d.Outcome(), "%+v", d)
	}
}
