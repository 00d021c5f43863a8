package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const abOutput = `This is ApacheBench, Version 2.3 <$Revision: 1903618 $>
Benchmarking 127.0.0.1 (be patient)
Server Software:        gunicorn
Server Hostname:        127.0.0.1
Server Port:            8000

Document Path:          /account/ulogin/3/
Document Length:        93 bytes

Concurrency Level:      100
Time taken for tests:   3.262 seconds
Complete requests:      1000
Failed requests:        7
   (Connect: 0, Receive: 2, Length: 5, Exceptions: 0)
Non-2xx responses:      3
Total transferred:      250000 bytes
Requests per second:    306.58 [#/sec] (mean)
Time per request:       326.180 [ms] (mean)

Percentage of the requests served within a certain time (ms)
  50%    310
  66%    320
  75%    330
  80%    335
  90%    340
  95%    350
  98%    360
  99%    370
 100%    400 (longest request)
`

func TestParseAB(t *testing.T) {
	res, err := ParseAB(ClosedSpec{N: 1000, C: 100}, abOutput)
	require.NoError(t, err)
	assert.Equal(t, 1000, res.Completed)
	assert.Equal(t, 10, res.Failed, "7 failed plus 3 non-2xx")
	assert.Equal(t, map[string]int{FailReceive: 2, FailLength: 5, FailNon2xx: 3}, res.FailedBy)
	assert.Equal(t, 3262*time.Millisecond, res.Total)
	assert.Equal(t, 306.58, res.ReqPerS)
	assert.Equal(t, 310*time.Millisecond, res.Latencies.P50)
	assert.Equal(t, 350*time.Millisecond, res.Latencies.P95)
	assert.Equal(t, 370*time.Millisecond, res.Latencies.P99)
	assert.Equal(t, 400*time.Millisecond, res.Latencies.Max)
}

func TestParseABNamesWhatIsMissing(t *testing.T) {
	_, err := ParseAB(ClosedSpec{}, "apr_socket_connect(): Connection refused (111)\n")
	assert.ErrorContains(t, err, "Complete requests")
}
