package htmlreport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// The sweep's section states the model's score, one row per cell with its
// verdicts, and what each path held, from sweep.json alone.
func TestSweepSection(t *testing.T) {
	sec := section(t, string(render(t, fixtureDir)), "sweep")
	assert.Contains(t, sec, "Write time right on 58 of 60 predicted cells (97 %); stall right on 59 of 60 (98 %).")
	assert.Equal(t, 60, strings.Count(sec, "<tr><td><b>"), "one row per cell")
	assert.Contains(t, sec, "nginx-off · stock · 1 MiB/s")
	assert.Contains(t, sec, "pilot-nginx-off")
	assert.Equal(t, 2, strings.Count(sec, `class="n fail"`), "the two cells whose write the model missed")
}

func TestSweepAbsentOrEmpty(t *testing.T) {
	dir := copyFixture(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "sweep.json")))
	assert.Contains(t, string(render(t, dir)), "sweep.json is absent")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "sweep.json"), []byte(`{"cells": []}`), 0o644))
	assert.Contains(t, string(render(t, dir)), "sweep.json holds no cell")
}

// The boundary sits between the columns around it, clamped half a column
// beyond the ends.
func TestSizeIndex(t *testing.T) {
	sizes := []int64{4 << 20, 8 << 20, 12 << 20, 16 << 20, 24 << 20}
	assert.InDelta(t, 0.5, sizeIndex(sizes, 6<<20), 1e-9)
	assert.InDelta(t, 3.5, sizeIndex(sizes, 20<<20), 1e-9)
	assert.InDelta(t, -0.5, sizeIndex(sizes, 1<<20), 1e-9)
	assert.InDelta(t, 4.5, sizeIndex(sizes, 40<<20), 1e-9)
}

// Article A's cells under both profiles, stock first, beside the article.
func TestProfilesTable(t *testing.T) {
	v := buildProfiles([]report.Condition{
		{ID: "nginx-off-2dl@article-host", TCPProfile: "article-host", RunsValid: 3, P95Ms: 1100, P95MsMin: 800, P95MsMax: 1300, ArticleP95Ms: 1071.47},
		{ID: "nginx-off-2dl", TCPProfile: "stock", RunsValid: 3, P95Ms: 3760, P95MsMin: 3700, P95MsMax: 4300, ArticleP95Ms: 1071.47},
		{ID: "direct-0dl", TCPProfile: "stock", RunsValid: 3, P95Ms: 1.2, P95MsMin: 1.1, P95MsMax: 1.3, ArticleP95Ms: 1.57},
	})
	assert.Equal(t, []string{"stock", "article-host"}, v.Profiles)
	require.Len(t, v.Rows, 2)
	assert.Equal(t, profileRow{Ref: "nginx-off-2dl", Article: "1071", P95: []string{"3760 (3700–4300)", "1100 (800–1300)"}}, v.Rows[0])
	assert.Equal(t, []string{"1.2 (1.1–1.3)", "not run"}, v.Rows[1].P95)
	assert.Empty(t, buildProfiles([]report.Condition{{ID: "direct-0dl", TCPProfile: "stock"}}).Rows, "one profile: no table")
}
