package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"wsgilab/bench/internal/stats"
)

// DefaultClosedTimeout is ab's default per-request timeout (-s 30).
const DefaultClosedTimeout = 30 * time.Second

// ClosedSpec is a closed-loop load with Apache Bench's semantics: N
// requests in all, C at a time, each on a new connection (HTTP/1.0, no
// keep-alive), and a failed request does not stop the run (ab -r).
type ClosedSpec struct {
	URL     string        `json:"url"`
	N       int           `json:"n"`
	C       int           `json:"c"`
	Timeout time.Duration `json:"timeout_ns"`
	// Burn is a test knob of our generator alone: it spins this long on
	// the CPU per request, so the generator, not the server, becomes the
	// bottleneck. It exists to show that the cross-check against ab
	// catches a slowed generator; no measurement sets it. At most MaxBurn.
	Burn time.Duration `json:"burn_ns,omitempty"`
}

// MaxBurn bounds ClosedSpec.Burn.
const MaxBurn = 100 * time.Millisecond

// Validate names the first malformed field.
func (s ClosedSpec) Validate() error {
	if p, err := url.Parse(s.URL); err != nil || p.Scheme != "http" || p.Host == "" {
		return fmt.Errorf("load: %q is not an http:// URL", s.URL)
	}
	if s.N < 1 || s.C < 1 || s.C > s.N {
		return fmt.Errorf("load: want 1 <= C <= N, have N=%d C=%d", s.N, s.C)
	}
	if s.Timeout <= 0 {
		return errors.New("load: Timeout must be positive")
	}
	if s.Burn < 0 || s.Burn > MaxBurn {
		return fmt.Errorf("load: Burn %v: want 0 to %v", s.Burn, MaxBurn)
	}
	return nil
}

// Failure kinds, as ab counts them.
const (
	FailConnect = "connect"
	FailReceive = "receive"
	// FailLength is a body whose length differs from the first good
	// response's, ab's "Length" failure.
	FailLength = "length"
	FailNon2xx = "non-2xx"
)

// ClosedResult is what a closed-loop run measured.
type ClosedResult struct {
	Spec      ClosedSpec     `json:"spec"`
	Total     time.Duration  `json:"total_ns"`
	Completed int            `json:"completed"`
	Failed    int            `json:"failed"`
	FailedBy  map[string]int `json:"failed_by"`
	// ReqPerS is completed requests per second of Total, ab's figure.
	ReqPerS   float64         `json:"req_per_s"`
	Latencies stats.Latencies `json:"latencies"`
	// CPU is the generator's own CPU time, user plus system.
	CPU time.Duration `json:"cpu_ns"`
}

// Closed runs spec: C workers each take the next of N requests until none
// is left.
func Closed(ctx context.Context, spec ClosedSpec) (ClosedResult, error) {
	if err := spec.Validate(); err != nil {
		return ClosedResult{}, err
	}
	u, _ := url.Parse(spec.URL)
	req := []byte("GET " + u.RequestURI() + " HTTP/1.0\r\nHost: " + u.Host + "\r\nUser-Agent: labagent\r\nAccept: */*\r\n\r\n")

	var next atomic.Int64
	var wantLen atomic.Int64
	wantLen.Store(-1)
	var mu sync.Mutex
	res := ClosedResult{Spec: spec, FailedBy: map[string]int{}}
	var lat stats.Latencies
	var wg sync.WaitGroup
	start := time.Now()
	for range spec.C {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for next.Add(1) <= int64(spec.N) {
				began := time.Now()
				for spec.Burn > 0 && time.Since(began) < spec.Burn {
				}
				kind := oneClosed(ctx, u.Host, req, buf, spec.Timeout, &wantLen)
				d := time.Since(began)
				mu.Lock()
				res.Completed++
				if kind != "" {
					res.Failed++
					res.FailedBy[kind]++
				} else {
					lat.Add(d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Total = time.Since(start)
	lat.Close()
	res.Latencies = lat
	res.ReqPerS = float64(res.Completed) / res.Total.Seconds()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		res.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return res, nil
}

// oneClosed makes one request and returns its failure kind, "" when good.
// Like ab it reads the answer to EOF into one reused buffer and parses only
// the status line and the end of the header: no per-request allocation, so
// the generator's CPU stays near ab's.
func oneClosed(ctx context.Context, host string, req, buf []byte, timeout time.Duration, wantLen *atomic.Int64) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := plainDialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return FailConnect
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	conn.SetDeadline(dl)
	if _, err := conn.Write(req); err != nil {
		return FailReceive
	}
	var total, headerEnd int64 = 0, -1
	status := 0
	for {
		n, err := conn.Read(buf[min(total, int64(len(buf)/2)):])
		if headerEnd < 0 && n > 0 {
			// The header fits in the buffer's first half, so it is parsed in
			// place; a body beyond it is only counted.
			head := buf[:min(total+int64(n), int64(len(buf)))]
			if i := bytes.Index(head, []byte("\r\n\r\n")); i >= 0 {
				headerEnd = int64(i) + 4
				status = parseStatus(head)
			}
		}
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return FailReceive
		}
	}
	if headerEnd < 0 || status == 0 {
		return FailReceive
	}
	if status < 200 || status > 299 {
		return FailNon2xx
	}
	body := total - headerEnd
	if wantLen.CompareAndSwap(-1, body) || wantLen.Load() == body {
		return ""
	}
	return FailLength
}

// parseStatus reads the code of an "HTTP/1.x NNN ..." status line, 0 if
// there is none.
func parseStatus(b []byte) int {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 || len(b) < sp+4 || !bytes.HasPrefix(b, []byte("HTTP/")) {
		return 0
	}
	code, err := strconv.Atoi(string(b[sp+1 : sp+4]))
	if err != nil {
		return 0
	}
	return code
}
