package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
	"wsgilab/bench/internal/verdict"
)

const t0 = int64(1_000_000_000_000)

func at(ms int) int64 { return t0 + int64(ms)*int64(time.Millisecond) }

// record is a valid run of NginxOn-like condition c with one download, as
// SummarizeRun receives it: the client's result, the app's write record
// and the sampler's series (app and NGINX workers, temp files).
func record(c Condition) Record {
	fast := make([]load.FastRequest, 4)
	for i := range fast {
		fast[i] = load.FastRequest{Seq: i, Latency: time.Duration(i+1) * time.Millisecond, Status: 200, Bytes: 12}
	}
	res := load.Result{Spec: load.Spec{FastBodyBytes: 12}, StartUnixNano: t0, Elapsed: time.Second, Fast: fast,
		Downloads: []load.Download{{ID: "x-r1-dl1", Status: 200, Bytes: 100, Expected: 100, Completion: 800 * time.Millisecond}}}
	s := probe.Series{Spec: probe.SamplerSpec{AppPort: 8000, ProxyPort: 8080, TempDir: "/tmp/nginx-proxy-temp"},
		Processes: []probe.ProcessInfo{
			{Process: probe.Process{PID: 11, PPID: 10}, Role: "app", Worker: true},
			{Process: probe.Process{PID: 21, PPID: 20}, Role: "proxy", Worker: true},
		},
		Overhead: probe.Overhead{Wall: time.Second, Ticks: 3}}
	for i := range 3 {
		s.Resources = append(s.Resources, probe.ResourceSample{UnixNano: at(100 * i), Role: "app",
			Usage: probe.Usage{CPUUsage: time.Duration(i) * time.Millisecond}})
		s.Waits = append(s.Waits, probe.WaitSample{UnixNano: at(100 * i), Waits: []probe.Wait{
			{PID: 11, TID: 11, State: probe.WaitSend}, {PID: 21, TID: 21, State: probe.WaitIdle}}})
		s.TempFiles = append(s.TempFiles, probe.TempSample{UnixNano: at(100 * i), TotalBytes: int64(i) << 20})
	}
	return Record{Condition: c.ID, Run: 1, Pod: c.Pod("lab:x"), Load: res, Sampler: &s,
		Writes: map[string]stack.WriteRecord{"x-r1-dl1": {ID: "x-r1-dl1", Complete: true, Bytes: 100, Write: 50 * time.Millisecond}}}
}

var onCond = Condition{ID: "x", Server: ArticleA[0].Server, Path: NginxOn, Downloads: 1, BodyBytes: 100, ReadRate: 1000, TCP: Stock}

func TestSummarizeRunValid(t *testing.T) {
	rows := SummarizeRun(onCond, record(onCond))
	r := rows.Run
	require.True(t, r.Valid, r.Invalid)
	assert.Equal(t, 4, r.RequestsOK)
	assert.Equal(t, 1, r.DownloadsComplete)
	assert.InDelta(t, 4, r.P95Ms, 1e-9)
	require.NotNil(t, r.Observed)
	assert.Equal(t, 3, r.Observed.TempfileSamples)
	assert.InDelta(t, 2, r.Observed.TempfilePeakMiB, 1e-9)
	assert.Len(t, rows.Requests, 4)
}

// A run is invalid, naming why, when its sampler data cannot be trusted.
func TestSummarizeRunInvalidSampler(t *testing.T) {
	cases := map[string]struct {
		change func(*Record)
		want   string
	}{
		"error":        {func(r *Record) { r.Sampler.Errors = []string{"cgroup: permission denied"} }, "the sampler reported 1 error(s), first: cgroup: permission denied"},
		"no sample":    {func(r *Record) { r.Sampler.Resources = nil }, "the sampler took no sample of the app"},
		"no worker":    {func(r *Record) { r.Sampler.Processes = r.Sampler.Processes[1:] }, "the sampler saw no app worker"},
		"no nginx":     {func(r *Record) { r.Sampler.Processes = r.Sampler.Processes[:1] }, "the sampler saw no proxy worker"},
		"no temp file": {func(r *Record) { r.Sampler.TempFiles = nil }, "no sample of the proxy's temp files"},
		"no series":    {func(r *Record) { r.Sampler = nil }, "no /proc sampler series"},
		"no request":   {func(r *Record) { r.Load.Fast = nil }, "no /fast request was made"},
		"short body":   {func(r *Record) { r.Load.Fast[2].Bytes = 3 }, "1 of 4 /fast requests failed"},
		"no write":     {func(r *Record) { r.Writes = nil }, "has no complete record in the app"},
		"downloads":    {func(r *Record) { r.Load.Downloads = nil }, "0 slow clients' records came, the condition asks for 1"},
		"clock step":   {func(r *Record) { r.Load.WallStep = 36 * time.Millisecond }, "the wall clock moved 36ms against the monotonic clock"},
		"step back":    {func(r *Record) { r.Load.WallStep = -2 * time.Millisecond }, "the wall clock moved -2ms"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := record(onCond)
			tc.change(&rec)
			r := SummarizeRun(onCond, rec).Run
			assert.False(t, r.Valid)
			assert.Contains(t, r.Invalid, tc.want)
		})
	}
}

// A sampler figure is set only when every valid run observed it.
func TestSummarizeConditionAllOrNothing(t *testing.T) {
	one := SummarizeRun(onCond, record(onCond)).Run
	two := one
	two.Run = 2
	c := SummarizeCondition(onCond, []report.Run{one, two}, report.ArticleValue{})
	require.NotNil(t, c.TempfilePeakMiB)
	require.NotNil(t, c.AppWorkerSendShareMax)
	require.NotNil(t, c.ProxyWorkerSendShareMax)
	assert.InDelta(t, 1, *c.AppWorkerSendShareMax, 1e-9)
	assert.Len(t, c.SendShares, 2)

	obs := *two.Observed
	obs.Workers, obs.TempfileSamples = nil, 0
	two.Observed = &obs
	c = SummarizeCondition(onCond, []report.Run{one, two}, report.ArticleValue{})
	assert.Nil(t, c.TempfilePeakMiB, "run 2 has no temp-file sample")
	assert.Nil(t, c.AppWorkerSendShareMin, "run 2 saw no worker")
	assert.NotNil(t, c.AppCPUPercent, "both runs have the app's CPU")

	none := SummarizeCondition(onCond, nil, report.ArticleValue{})
	assert.Zero(t, none.RunsTotal)
	assert.Nil(t, none.AppCPUPercent)
}

// TestSamplerProblemsOfAKilledRole: the sampler's errors about a role the
// OOM killer hit (its container gone with its only process) are the
// outcome measured; any other error still makes the run unsound.
func TestSamplerProblemsOfAKilledRole(t *testing.T) {
	o := report.Observed{Errors: []string{"proxy cgroup: probe: pread cpuacct.usage: no such device"},
		Resources: map[string]report.ResourceSummary{"app": {Samples: 10}},
		Workers:   []report.WorkerWaits{{Role: "app", Samples: 10}}}
	assert.Len(t, samplerProblems(o, nil), 1)
	assert.Empty(t, samplerProblems(o, []string{"proxy"}))
	o.Errors = append(o.Errors, "app cgroup: probe: read: EIO")
	assert.Len(t, samplerProblems(o, []string{"proxy"}), 1, "the app was not killed")
}

// TestSummarizeKeepsTheRecordsOfHTTP2Clients: an HTTP/2 cell's summary
// says how many records a run keeps (a stream each), so its class reads
// its streams, not its connections, as whole.
func TestSummarizeKeepsTheRecordsOfHTTP2Clients(t *testing.T) {
	c, ok := Cell(H2SlowRead, MatrixRows[0], NginxH2Off, 2)
	require.True(t, ok)
	s := SummarizeCondition(c, nil, report.ArticleValue{})
	assert.Equal(t, 4, s.Records)
	assert.Equal(t, 4, s.RecordsPerRun())
	plain, _ := Cell(SlowRead, MatrixRows[0], Direct, 2)
	s = SummarizeCondition(plain, nil, report.ArticleValue{})
	assert.Zero(t, s.Records, "left out where it is Downloads")
	assert.Equal(t, 2, s.RecordsPerRun())
}

// TestSummarizeTheHTTP2Series: a run's HTTP/2 /fast series has its own
// p95 and its own requests' rows; a request of it that failed makes the
// run invalid as one of the HTTP/1.1 series does, and the condition's
// HTTP/2 p95 is the median of its valid runs'. The held workers fold as
// the other sampler figures.
func TestSummarizeTheHTTP2Series(t *testing.T) {
	rec := record(onCond)
	for i := range 4 {
		rec.Load.FastH2 = append(rec.Load.FastH2, load.FastRequest{Seq: i, Latency: time.Duration(10*(i+1)) * time.Millisecond, Status: 200, Bytes: 12})
	}
	rows := SummarizeRun(onCond, rec)
	r := rows.Run
	require.True(t, r.Valid, r.Invalid)
	assert.InDelta(t, 4, r.P95Ms, 1e-9, "the HTTP/1.1 series' own")
	assert.InDelta(t, 40, r.P95MsH2, 1e-9)
	assert.Equal(t, 4, r.RequestsOKH2)
	require.Len(t, rows.Requests, 8)
	assert.Empty(t, rows.Requests[0].Proto)
	assert.Equal(t, report.ProtoH2, rows.Requests[7].Proto)
	assert.Equal(t, 1, r.Observed.AppWorkersHeld)

	two := r
	two.Run, two.P95MsH2 = 2, 60
	c := SummarizeCondition(onCond, []report.Run{r, two}, report.ArticleValue{})
	require.NotNil(t, c.P95MsH2)
	assert.InDelta(t, 50, *c.P95MsH2, 1e-9)
	assert.Equal(t, []float64{40, 60}, c.P95MsH2Runs)
	require.NotNil(t, c.AppWorkersHeld)
	assert.InDelta(t, 1, *c.AppWorkersHeld, 1e-9)
	assert.InDelta(t, 1, *c.AppWorkers, 1e-9)
	assert.InDelta(t, 0, *c.AppWorkersFree, 1e-9)
	assert.Equal(t, 8, c.RequestsOKH2)
	assert.Equal(t, 8, c.RequestsTotalH2)
	assert.Equal(t, report.ClassProtected, verdict.Class(c), "both series served")

	// The free workers fold per run, never as a difference of medians:
	// (2 seen, 2 held), (3, 3), (3, 2) are 0, 0 and 1 free, median 0
	// (the medians' difference would say 1).
	var runs []report.Run
	for i, wh := range [][2]int{{2, 2}, {3, 3}, {3, 2}} {
		o := *r.Observed
		o.AppWorkers, o.AppWorkersHeld = wh[0], wh[1]
		x := r
		x.Run, x.Observed = i+1, &o
		runs = append(runs, x)
	}
	c = SummarizeCondition(onCond, runs, report.ArticleValue{})
	assert.InDelta(t, 3, *c.AppWorkers, 1e-9)
	assert.InDelta(t, 2, *c.AppWorkersHeld, 1e-9)
	assert.InDelta(t, 0, *c.AppWorkersFree, 1e-9)

	rec.Load.FastH2[1].Error = "connect: refused"
	r = SummarizeRun(onCond, rec).Run
	assert.False(t, r.Valid)
	assert.Contains(t, r.Invalid, "1 of 4 /fast requests over HTTP/2 failed")
	assert.Contains(t, r.Invalid, "HTTP/2 request 1: status 200, 12 bytes, connect: refused")
	failed := SummarizeCondition(onCond, []report.Run{r}, report.ArticleValue{})
	assert.Equal(t, 3, failed.RequestsOKH2)
	assert.Equal(t, report.ClassFailed, verdict.Class(failed), "a failed request of the HTTP/2 series fails the cell")
	assert.Contains(t, StepOf(failed, 2, 1000).Failed, "1 of 4 fast requests over HTTP/2 failed")

	plain := SummarizeCondition(onCond, []report.Run{SummarizeRun(onCond, record(onCond)).Run}, report.ArticleValue{})
	assert.Nil(t, plain.P95MsH2, "no HTTP/2 series, no figure")
}

// An app the OOM killer hit lost its write records with its container: a
// download that completed before the kill stands on the client's record,
// and the run is sound, the kill its server's failure; without the kill,
// the missing record makes it unsound.
func TestSummarizeRunOOMKilledAppKeepsNoRecords(t *testing.T) {
	rec := record(onCond)
	rec.Writes = nil
	rec.OOMKilled = []string{podspec.RoleApp}
	r := SummarizeRun(onCond, rec).Run
	assert.True(t, r.Sound, "the client's complete download, with the app's records gone with it: %s", r.Invalid)
	assert.False(t, r.Valid)
	assert.Contains(t, r.Invalid, "the OOM killer hit the app")
	assert.NotContains(t, r.Invalid, "has no complete record in the app")

	rec.OOMKilled = []string{podspec.RoleProxy}
	r = SummarizeRun(onCond, rec).Run
	assert.False(t, r.Sound, "the app lived: its record is missing")
	assert.Contains(t, r.Invalid, "has no complete record in the app")
}
