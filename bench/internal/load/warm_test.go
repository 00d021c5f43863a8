package load

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Warming makes its requests at once, each whole on a connection of its
// own: GETs read to the end, POSTs of the body's length; a status not
// 2xx, a short body or a bad spec is an error naming the request.
func TestRunWarm(t *testing.T) {
	var gets, posted, conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /export", func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		w.Write(make([]byte, 1<<20))
	})
	mux.HandleFunc("POST /import", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		posted.Add(n)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	s := httptest.NewUnstartedServer(mux)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	ctx := context.Background()

	require.NoError(t, RunWarm(ctx, Warm{URL: s.URL + "/export", Count: 3}))
	assert.EqualValues(t, 3, gets.Load())
	require.NoError(t, RunWarm(ctx, Warm{URL: s.URL + "/import", BodyBytes: 5 << 20, Count: 2}))
	assert.EqualValues(t, 10<<20, posted.Load())
	assert.EqualValues(t, 5, conns.Load(), "a connection of its own each")

	assert.ErrorContains(t, RunWarm(ctx, Warm{URL: s.URL + "/broken", Count: 1}), "warming GET "+s.URL+"/broken: status 500, want 2xx")
	assert.ErrorContains(t, RunWarm(ctx, Warm{URL: s.URL + "/export"}), "load: Warm count 0")
	sp := NewSpec(s.URL, "x")
	require.NoError(t, sp.Validate())
	sp.Warm = &Warm{URL: "ftp://x", Count: 1}
	assert.ErrorContains(t, sp.Validate(), `load: "ftp://x" is not an http:// or https:// URL`)
}
