package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClosedCountsLikeAB(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		switch {
		case k%10 == 0:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("0123456789"))
		case k%10 == 5:
			w.Write([]byte("0123")) // another length than the first good one
		default:
			w.Write([]byte("0123456789"))
		}
	}))
	t.Cleanup(srv.Close)

	res, err := Closed(context.Background(), ClosedSpec{URL: srv.URL + "/x", N: 100, C: 4, Timeout: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 100, res.Completed)
	assert.Equal(t, 10, res.FailedBy[FailNon2xx])
	assert.Equal(t, 10, res.FailedBy[FailLength])
	assert.Equal(t, 20, res.Failed)
	assert.Equal(t, 80, res.Latencies.Count)
	assert.Positive(t, res.ReqPerS)
	assert.Positive(t, res.CPU)
}

func TestClosedCountsConnectFailures(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	res, err := Closed(context.Background(), ClosedSpec{URL: url, N: 5, C: 1, Timeout: time.Second})
	require.NoError(t, err)
	assert.Equal(t, 5, res.FailedBy[FailConnect])
}

func TestClosedSpecValidate(t *testing.T) {
	err := ClosedSpec{URL: "http://127.0.0.1:1", N: 1, C: 2, Timeout: time.Second}.Validate()
	assert.ErrorContains(t, err, "C <= N")
	err = ClosedSpec{URL: "127.0.0.1:1", N: 1, C: 1, Timeout: time.Second}.Validate()
	assert.True(t, err != nil && strings.Contains(err.Error(), "http://"))
}

// The Burn knob makes our generator the bottleneck: each request costs at
// least Burn of CPU, whatever the server does.
func TestClosedBurnSlowsTheGenerator(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	const n, burn = 40, 3 * time.Millisecond
	res, err := Closed(context.Background(), ClosedSpec{URL: srv.URL, N: n, C: 4, Timeout: time.Second, Burn: burn})
	require.NoError(t, err)
	assert.Zero(t, res.Failed)
	floor := n * burn / time.Duration(runtime.GOMAXPROCS(0))
	assert.GreaterOrEqual(t, res.Total, floor, "n x burn spread over the Ps")

	err = ClosedSpec{URL: srv.URL, N: 1, C: 1, Timeout: time.Second, Burn: time.Second}.Validate()
	assert.ErrorContains(t, err, "Burn 1s: want 0 to 100ms")
}
