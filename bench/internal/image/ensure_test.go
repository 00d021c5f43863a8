package image

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// A series that found the images make test's image step built reports
// that build (By, its duration, how the base was built) and its log; one
// that built them itself, or a step that found them too, changes nothing;
// a record of other images is refused, naming both.
func TestAdopt(t *testing.T) {
	found := func(ref string) report.Image {
		return report.Image{Ref: ref, ID: "sha256:" + ref, Duration: time.Millisecond}
	}
	rec := &report.ImageRecord{
		Base: report.Image{Ref: "wsgilab-base:1", Built: true, Duration: 150 * time.Second, SourcesHidden: true, Archive: "http://deb.debian.org/debian"},
		Lab:  report.Image{Ref: "wsgilab:2", Built: true, Duration: 4 * time.Second},
		Log:  "build.sh: Debian archive http://deb.debian.org/debian (sources: x)\n",
	}

	base, lab, log, err := Adopt(found("wsgilab-base:1"), found("wsgilab:2"), rec)
	require.NoError(t, err)
	assert.Equal(t, report.Image{Ref: "wsgilab-base:1", ID: "sha256:wsgilab-base:1", Built: true, Duration: 150 * time.Second,
		SourcesHidden: true, Archive: "http://deb.debian.org/debian", By: ByImageStep}, base)
	assert.Equal(t, report.Image{Ref: "wsgilab:2", ID: "sha256:wsgilab:2", Built: true, Duration: 4 * time.Second, By: ByImageStep}, lab)
	assert.Equal(t, rec.Log, log)

	// The series built them itself: its own build stands.
	own := report.Image{Ref: "wsgilab-base:1", Built: true, Duration: time.Minute}
	base, _, log, err = Adopt(own, found("wsgilab:2"), rec)
	require.NoError(t, err)
	assert.Equal(t, own, base)
	assert.Empty(t, log)

	// The step found them too, or there is no step.
	foundToo := &report.ImageRecord{Base: found("wsgilab-base:1"), Lab: found("wsgilab:2")}
	for _, r := range []*report.ImageRecord{foundToo, nil} {
		base, lab, log, err = Adopt(found("wsgilab-base:1"), found("wsgilab:2"), r)
		require.NoError(t, err)
		assert.Equal(t, found("wsgilab-base:1"), base)
		assert.Equal(t, found("wsgilab:2"), lab)
		assert.Empty(t, log)
	}

	_, _, _, err = Adopt(found("wsgilab-base:1"), found("wsgilab:3"), rec)
	assert.EqualError(t, err, "image: the image step's record names wsgilab-base:1 and wsgilab:2, but this series runs wsgilab-base:1 and wsgilab:3: run both from one checkout")
}
