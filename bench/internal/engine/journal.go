package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// JournalProtocol changes whenever what a journalled unit holds, or how a
// run is carried out, changes meaning: a journal of another protocol is
// never resumed. 2: article B's non-blocking cells are measured in
// rounds (RoundsB), and their run k pairs with the other cells' run k.
// 3: the fingerprint holds the runs per sweep, matrix and streaming cell,
// the streaming cells and the shard. 4: a pod's proxy is a proxy.Config
// (its kind, preset and addresses, NGINX's settings nested), and the
// proxy role's pids limit is 128.
const JournalProtocol = 4

// Fingerprint is everything a resumed series must share with the journal
// it resumes: the host, the images, every condition's pod and load as they
// would run, the samplers' intervals, the hardening, the protocol and the
// settings that shape a run. Any difference is refused, never silently
// mixed.
type Fingerprint struct {
	Protocol  int    `json:"protocol"`
	Host      Host   `json:"host"`
	LabImage  string `json:"lab_image"`
	BaseImage string `json:"base_image"`
	Runs      int    `json:"runs"`
	Profile   string `json:"profile"`
	// SweepRuns, MatrixRuns, StreamRuns and ExhaustionRuns are the
	// plan's runs per cell.
	SweepRuns      int `json:"sweep_runs"`
	MatrixRuns     int `json:"matrix_runs"`
	StreamRuns     int `json:"stream_runs"`
	ExhaustionRuns int `json:"exhaustion_runs"`
	// Shard is LAB_SHARD: a journal resumes its own shard only. The
	// series' hash (SeriesHash) leaves it out, as it does the host.
	Shard Shard `json:"shard"`
	// ArticleA and ArticleB are each condition's and cell's pod and load;
	// ArticleA holds the profile's sweep, matrix and streaming cells too.
	ArticleA  map[string]fingerprintA      `json:"article_a"`
	ArticleB  map[string]podspec.Config    `json:"article_b"`
	ProfileB  ProfileB                     `json:"profile_b"`
	Sampling  map[string]time.Duration     `json:"sampling"`
	Hardening map[string]podspec.Hardening `json:"hardening"`
}

// Host is what of the machine a series' figures depend on.
type Host struct {
	CPUModel string `json:"cpu_model"`
	CPUs     int    `json:"cpus"`
	Kernel   string `json:"kernel"`
	Docker   string `json:"docker"`
}

type fingerprintA struct {
	Pod  podspec.Config `json:"pod"`
	Load load.Spec      `json:"load"`
}

// NewFingerprint is the fingerprint of a series run with s on these images
// and this host.
func NewFingerprint(labImage, baseImage string, s Settings, host Host) Fingerprint {
	f := Fingerprint{Protocol: JournalProtocol, Host: host, LabImage: labImage, BaseImage: baseImage, Runs: s.Runs,
		Profile: s.Profile, ProfileB: ProfilesB[s.Profile], ArticleA: map[string]fingerprintA{},
		ArticleB: map[string]podspec.Config{}, Hardening: map[string]podspec.Hardening{},
		Sampling: map[string]time.Duration{"a": probe.DefaultInterval, "b": SamplerIntervalB}}
	plan := s.Table() // every shard of a series shares its table
	f.SweepRuns, f.MatrixRuns, f.StreamRuns, f.ExhaustionRuns, f.Shard = plan.SweepRuns, plan.MatrixRuns, plan.StreamRuns, plan.ExhaustionRuns, s.Shard
	for _, c := range plan.Table() {
		f.ArticleA[c.ID] = fingerprintA{Pod: c.Pod(labImage), Load: plan.Load(c, "http://pod", c.ID)}
	}
	for _, srv := range ServersB {
		for _, b := range BlockingMs {
			f.ArticleB[verdict.Cell(srv.ID, b)] = PodB(labImage, srv, b)
		}
	}
	for role, h := range podspec.DefaultHardening {
		h.Why = "" // prose; editing it changes no result
		f.Hardening[role] = h
	}
	return f
}

// Hash is the fingerprint's SHA-256, hex.
func (f Fingerprint) Hash() string {
	b, err := json.Marshal(f)
	if err != nil {
		panic(err) // plain data; a failure is a broken build
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// SeriesHash is the hash of f less its host: what every shard of one
// series shares, whichever machine ran it (labreport -merge compares the
// hosts apart).
func (f Fingerprint) SeriesHash() string {
	f.Host, f.Shard = Host{}, Shard{}
	return f.Hash()
}

// differs says how f (the journal's) and g (this series') differ: each
// differing field, with both values when they are short.
func (f Fingerprint) differs(g Fingerprint) []string {
	var out []string
	fv, gv := reflect.ValueOf(f), reflect.ValueOf(g)
	for i := range fv.NumField() {
		a, _ := json.Marshal(fv.Field(i).Interface())
		b, _ := json.Marshal(gv.Field(i).Interface())
		if string(a) == string(b) {
			continue
		}
		name := fv.Type().Field(i).Tag.Get("json")
		if len(a)+len(b) <= 160 {
			name += fmt.Sprintf(" (journal %s, now %s)", a, b)
		}
		out = append(out, name)
	}
	return out
}

// JournalMode is what a series does with its report directory's journal.
type JournalMode string

// The journal modes, LAB_RESUME's values.
const (
	// JournalOff keeps no journal: make test, make bench, plain go test.
	JournalOff JournalMode = "0"
	// JournalResume keeps one, and resumes an unfinished series of the
	// same fingerprint (make repro).
	JournalResume JournalMode = "1"
	// JournalFresh keeps one, replacing any there (make repro FRESH=1).
	JournalFresh JournalMode = "fresh"
)

// Journal keeps each completed unit of a series (an article A run, an
// article B cell) in <report dir>/journal, written atomically as the unit
// ends, so that an interrupted series resumes: completed units are kept,
// the unit in progress is lost with the process, and only the missing
// units run. A series that ends with every test passing marks its journal
// complete, and the next one starts afresh. A nil *Journal keeps nothing
// and finds nothing.
type Journal struct {
	dir string
	fp  Fingerprint

	mu    sync.Mutex
	fresh bool // the journal on disk, if any, is not this series'
	// resumable are the units journalled before this process, each given
	// back once: a unit this process completes is never handed back to
	// it (a benchmark's -count repeats run k anew).
	resumable map[string]bool
	kept      []string
	aborts    []report.Abort
}

// ErrFingerprint is OpenJournal's error for a journal of another series.
var ErrFingerprint = errors.New("engine: the journal belongs to another series")

const (
	journalFingerprint = "fingerprint"
	journalComplete    = "complete"
	JournalAborts      = "aborts"
)

// OpenJournal opens reportDir's journal for a series of fingerprint fp in
// mode. JournalResume keeps an unfinished journal of the same fingerprint
// and refuses one of another with ErrFingerprint, naming what differs; a
// complete journal, or none, starts afresh. A series that starts afresh
// replaces the journal there only when its first unit completes, so a
// process that runs nothing (make image, a smoke test) leaves an
// interrupted series' journal as it was.
func OpenJournal(reportDir string, fp Fingerprint, mode JournalMode) (*Journal, report.Resume, error) {
	res := report.Resume{Fingerprint: fp.Hash()}
	if mode == JournalOff {
		return nil, res, nil
	}
	j := &Journal{dir: filepath.Join(reportDir, "journal"), fp: fp, fresh: true}
	if mode == JournalFresh {
		return j, res, nil
	}
	var old Fingerprint
	if ok, err := j.read(journalFingerprint, &old); !ok || err != nil {
		return j, res, err
	}
	if done, _ := j.read(journalComplete, new(bool)); done {
		return j, res, nil // the last series finished: a new one starts
	}
	if d := old.differs(fp); len(d) > 0 {
		return nil, res, fmt.Errorf("%w in %s: it differs from this series in %s; "+
			"start afresh with make repro FRESH=1 (LAB_RESUME=fresh), or choose another LAB_REPORT_DIR",
			ErrFingerprint, j.dir, strings.Join(d, "; "))
	}
	units, err := j.units()
	if err != nil {
		return nil, res, err
	}
	if _, err := j.read(JournalAborts, &j.aborts); err != nil {
		return nil, res, err
	}
	j.fresh = false
	res.Resumed, res.Kept = len(units) > 0, units
	j.resumable = map[string]bool{}
	for _, u := range units {
		j.resumable[u] = true
	}
	return j, res, nil
}

// read decodes journal file key.json into v; false when it is absent.
func (j *Journal) read(key string, v any) (bool, error) {
	b, err := os.ReadFile(filepath.Join(j.dir, key+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("engine: read the journal: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("engine: journal %s/%s.json: %w; start afresh with make repro FRESH=1 (LAB_RESUME=fresh)", j.dir, key, err)
	}
	return true, nil
}

// begin replaces a fresh series' journal with an empty one of its
// fingerprint, once.
func (j *Journal) begin() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.fresh {
		return nil
	}
	if err := os.RemoveAll(j.dir); err != nil {
		return fmt.Errorf("engine: clear the journal: %w", err)
	}
	if err := report.WriteFile(j.dir, journalFingerprint+".json", report.JSON(j.fp)); err != nil {
		return err
	}
	j.fresh = false
	return nil
}

// Complete marks the journal of a series that ended with every test
// passing: the next series starts afresh.
func (j *Journal) Complete() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	fresh := j.fresh
	j.mu.Unlock()
	if fresh {
		return nil // this process journalled nothing
	}
	return report.WriteFile(j.dir, journalComplete+".json", report.JSON(true))
}

// Aborts are the safety stop's aborts the resumed series recorded.
func (j *Journal) Aborts() []report.Abort {
	if j == nil {
		return nil
	}
	return slices.Clone(j.aborts)
}

// units lists the journalled units, sorted.
func (j *Journal) units() ([]string, error) {
	var out []string
	for _, sub := range []string{"a", "b"} {
		es, err := os.ReadDir(filepath.Join(j.dir, sub))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("engine: read the journal: %w", err)
		}
		for _, e := range es {
			if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(name, ".") {
				out = append(out, sub+"/"+name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// save writes v as key ("a/<condition>-run<k>", "b/<cell>", "aborts").
func (j *Journal) Save(key string, v any) error {
	if j == nil {
		return nil
	}
	if err := j.begin(); err != nil {
		return err
	}
	dir, name := filepath.Split(key)
	return report.WriteFile(filepath.Join(j.dir, dir), name+".json", report.JSON(v))
}

// load reads unit key into v; false when this series may not take it from
// the journal (absent, journalled by this process, or undecodable: a unit
// cut short by a crash is run again).
func (j *Journal) Load(key string, v any) (bool, error) {
	if j == nil {
		return false, nil
	}
	j.mu.Lock()
	ok := j.resumable[key]
	delete(j.resumable, key)
	j.mu.Unlock()
	if !ok {
		return false, nil
	}
	if ok, err := j.read(key, v); !ok || err != nil {
		return false, nil
	}
	j.mu.Lock()
	j.kept = append(j.kept, key)
	j.mu.Unlock()
	return true, nil
}

// has is whether this series may take unit key from the journal (load
// would find it), without taking it.
func (j *Journal) Has(key string) bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.resumable[key]
}

// fileRef is a journal unit that is a file written elsewhere (article A's
// raw record): its path relative to the report directory and its hash, so
// a record changed since is not taken for the unit.
type fileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// saveFile journals the file at rel (under the report directory) as key.
func (j *Journal) SaveFile(key, rel string) error {
	if j == nil {
		return nil
	}
	sum, err := fileHash(filepath.Join(filepath.Dir(j.dir), rel))
	if err != nil {
		return err
	}
	return j.Save(key, fileRef{Path: rel, SHA256: sum})
}

// loadFile decodes the file journalled as key into v. A file changed or
// gone since is an error: the report directory was tampered with.
func (j *Journal) LoadFile(key string, v any) (bool, error) {
	var ref fileRef
	if ok, err := j.Load(key, &ref); !ok || err != nil {
		return ok, err
	}
	path := filepath.Join(filepath.Dir(j.dir), ref.Path)
	sum, err := fileHash(path)
	if err != nil || sum != ref.SHA256 {
		return false, fmt.Errorf("engine: journal unit %s: %s changed or vanished since it was journalled (%v); "+
			"start afresh with make repro FRESH=1 (LAB_RESUME=fresh)", key, ref.Path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("engine: journal unit %s: %s: %w", key, ref.Path, err)
	}
	return true, nil
}

func fileHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// Kept lists the units this process took from the journal instead of
// running them.
func (j *Journal) Kept() []string {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.kept)
}

// UnitA and UnitB are a journal's unit keys: run k of article A's table's
// condition c (article A, the sweep, the matrix, the streaming table and
// stack checks alike), and article B's cell.
func UnitA(c Condition, k int) string { return fmt.Sprintf("a/%s-run%d", c.ID, k) }
func UnitB(cell string) string        { return "b/" + cell }
