package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowser loads the rendered page in headless Chromium: the DOM the
// browser built must hold every chart with its <svg>, the browser must
// log no script error, and a screenshot is saved next to the page
// (report.png).
//
// By default it renders a copy of the fixture in a temporary directory.
// LAB_BROWSER_DIR=DIR renders the report directory DIR instead, in place:
// DIR/report.html and DIR/report.png stay for a look.
//
// It needs Debian's chromium (apt-get install -y chromium) and fails
// without it; LAB_NO_BROWSER=1 skips it.
func TestBrowser(t *testing.T) {
	if os.Getenv("LAB_NO_BROWSER") == "1" {
		t.Skip("LAB_NO_BROWSER=1: the headless Chromium check is skipped")
	}
	bin := chromium()
	if bin == "" {
		t.Fatal("headless Chromium is not installed: install it with `apt-get install -y chromium` " +
			"(or set LAB_NO_BROWSER=1 to skip this test)")
	}

	dir, charts := os.Getenv("LAB_BROWSER_DIR"), fixtureCharts()
	keep := dir != ""
	if !keep {
		dir = copyFixture(t)
	} else {
		charts = nil // whatever the page has; checked below to hold an svg each
	}
	require.NoError(t, Write(dir))
	page, err := filepath.Abs(filepath.Join(dir, FileName))
	require.NoError(t, err)
	url := "file://" + page
	if charts == nil {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		for name := range parse(t, b).figures {
			charts = append(charts, name)
		}
		require.NotEmpty(t, charts, "the page has no chart")
	}

	// The DOM after the page loaded, and the browser's log.
	dom, logs := runChromium(t, bin, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000", "--dump-dom", url)
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "Uncaught") || strings.Contains(l, "Failed to load resource") {
			t.Errorf("browser: %s", l)
		}
	}
	require.Contains(t, dom, "</html>", "no DOM from Chromium; its log:\n%s", logs)
	checkPage(t, []byte(dom), charts)

	// The screenshot, in a second run.
	shot := filepath.Join(filepath.Dir(page), "report.png")
	_ = os.Remove(shot)
	// Headless Chromium shoots its window, not the page, so the window is
	// taller than any report and the blank rows below the page are cut.
	_, logs = runChromium(t, bin, "--hide-scrollbars", "--screenshot="+shot,
		fmt.Sprintf("--window-size=%d,%d", shotWidth, shotMaxHeight), url)
	require.NoError(t, trimScreenshot(t, shot), "screenshot; Chromium's log:\n%s", logs)
	if keep {
		t.Logf("screenshot: %s", shot)
	} else {
		t.Logf("screenshot: %s (removed with the test's temporary directory; LAB_BROWSER_DIR=DIR keeps DIR/report.png)", shot)
	}
}

const (
	shotWidth     = 1400
	shotMaxHeight = 32000
)

// trimScreenshot cuts the blank rows below the page, and fails the test
// when the page filled the whole window: the screenshot would miss its end.
func trimScreenshot(t *testing.T, path string) error {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return err
	}
	b := img.Bounds()
	assert.Equal(t, shotWidth, b.Dx())
	bg := img.At(b.Min.X, b.Max.Y-1)
	last := b.Min.Y
	for y := b.Max.Y - 1; y >= b.Min.Y && last == b.Min.Y; y-- {
		for x := b.Min.X; x < b.Max.X; x++ {
			if img.At(x, y) != bg {
				last = y
				break
			}
		}
	}
	if last >= b.Max.Y-2 {
		t.Errorf("the page is taller than the %d px window: the screenshot misses its end", shotMaxHeight)
	}
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return fmt.Errorf("screenshot: cannot crop a %T", img)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	return png.Encode(out, sub.SubImage(image.Rect(b.Min.X, b.Min.Y, b.Max.X, min(last+24, b.Max.Y))))
}

// chromium is the path of a Chromium binary, or "" when there is none.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// runChromium runs headless Chromium with a fresh profile and no
// background networking, and returns its stdout and stderr.
func runChromium(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	require.NoError(t, err, "%s %s:\n%s", bin, strings.Join(args, " "), errb.String())
	return out.String(), errb.String()
}
