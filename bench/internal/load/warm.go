package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Warm is what a run fetches whole before its sampler starts, so that
// what a server opens on its first request to a path and keeps (a
// database connection, a file it caches, a front door's pooled
// connection) is in the count of descriptors a leak check compares the
// end with, not taken for a leak: Count requests at once, each on a
// connection of its own closed after it, a GET of URL read to its end,
// or, with BodyBytes above 0, a POST of that many bytes.
type Warm struct {
	URL       string `json:"url"`
	BodyBytes int64  `json:"body_bytes,omitempty"`
	Count     int    `json:"count"`
}

// DefaultWarmWait bounds the warming, its requests together.
const DefaultWarmWait = 30 * time.Second

// validate names what is wrong with w.
func (w Warm) validate() error {
	if w.Count < 1 || w.BodyBytes < 0 {
		return fmt.Errorf("load: Warm count %d, body %d bytes: want 1 or more requests and a body of 0 (a GET) or more bytes", w.Count, w.BodyBytes)
	}
	return checkURL(w.URL)
}

// RunWarm makes w's requests at once and waits for all of them, at most
// DefaultWarmWait: every one must get a 2xx status and its whole body.
func RunWarm(ctx context.Context, w Warm) error {
	if err := w.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultWarmWait)
	defer cancel()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	errs := make([]error, w.Count)
	var wg sync.WaitGroup
	for i := range w.Count {
		wg.Go(func() { errs[i] = warmOnce(ctx, c, w) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// warmOnce is one of w's requests.
func warmOnce(ctx context.Context, c *http.Client, w Warm) error {
	method, body := http.MethodGet, io.Reader(nil)
	if w.BodyBytes > 0 {
		method, body = http.MethodPost, io.LimitReader(zeroReader{}, w.BodyBytes)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.URL, body)
	if err != nil {
		return err
	}
	req.ContentLength = w.BodyBytes
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("warming %s %s: %w", method, w.URL, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("warming %s %s: %w", method, w.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("warming %s %s: status %d, want 2xx", method, w.URL, resp.StatusCode)
	}
	return nil
}

// zeroReader reads zeros.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
