package htmlreport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A directory with only stacks.json (from make check) renders its stack
// checks: each verdict, every behaviour's steps and the advice.
func TestStacks(t *testing.T) {
	page := string(render(t, "testdata/stacks"))
	assert.Contains(t, page, `<section id="stacks">`)
	assert.Contains(t, page, `shop-sync: <span class="verdict fail">FAIL</span>`)
	assert.Contains(t, page, `shop-gthread: <span class="verdict pass">PASS</span>`)
	assert.Contains(t, page, "<b>stalls at 2 slow readers</b>")
	assert.Contains(t, page, "2: p95 5965 ms (broken; runs 5965 ms, 5964 ms)")
	assert.Contains(t, page, "in our matrix, NGINX with proxy_buffering on kept every server setup protected from 2 slow readers")
	assert.Equal(t, 4, strings.Count(page, "<b>Advice:</b>"))
	// Its matrix.json holds a stack row only: no empty cell tables, the
	// row's steps on its own path.
	assert.NotContains(t, page, "matrix-overview")
	assert.NotContains(t, page, "not run</td>")
	assert.Contains(t, page, "slow-read (nginx-custom)")
}
