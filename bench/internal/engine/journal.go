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

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// JournalProtocol changes whenever what a journalled unit holds, or how a
// run is carried out, changes meaning: a journal of another protocol is
// never resumed.
const JournalProtocol = 1

// Fingerprint is everything a resumed series must share with the journal
// it resumes: images, conditions, the protocol and the settings that shape
// a run. Any difference is refused, never silently mixed.
type Fingerprint struct {
	Protocol   int                          `json:"protocol"`
	LabImage   string                       `json:"lab_image"`
	BaseImage  string                       `json:"base_image"`
	Runs       int                          `json:"runs"`
	Profile    string                       `json:"profile"`
	ProfileB   ProfileB                     `json:"profile_b"`
	ArticleA   []Condition                  `json:"article_a"`
	ArticleB   map[string]podspec.Server    `json:"article_b"`
	Hardening  map[string]podspec.Hardening `json:"hardening"`
	PodDefault podspec.Config               `json:"pod_default"`
}

// NewFingerprint is the fingerprint of a series run with s on these images.
func NewFingerprint(labImage, baseImage string, s Settings) Fingerprint {
	f := Fingerprint{Protocol: JournalProtocol, LabImage: labImage, BaseImage: baseImage, Runs: s.Runs,
		Profile: s.Profile, ProfileB: ProfilesB[s.Profile], ArticleA: ArticleA,
		ArticleB: map[string]podspec.Server{}, Hardening: podspec.DefaultHardening, PodDefault: podspec.New(labImage)}
	for _, srv := range ServersB {
		for _, b := range BlockingMs {
			f.ArticleB[verdict.Cell(srv.ID, b)] = srv.Build(b)
		}
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

// differs names the fields in which f and g differ.
func (f Fingerprint) differs(g Fingerprint) []string {
	var out []string
	fv, gv := reflect.ValueOf(f), reflect.ValueOf(g)
	for i := range fv.NumField() {
		a, _ := json.Marshal(fv.Field(i).Interface())
		b, _ := json.Marshal(gv.Field(i).Interface())
		if string(a) != string(b) {
			out = append(out, fv.Type().Field(i).Tag.Get("json"))
		}
	}
	return out
}

// Journal keeps each completed unit of a series (an article A run, an
// article B cell) in <report dir>/journal, written atomically as the unit
// ends, so that an interrupted series resumes: completed units are kept,
// the unit in progress is lost with the process, and only the missing
// units run. A nil *Journal keeps nothing and finds nothing.
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
}

// ErrFingerprint is OpenJournal's error for a journal of another series.
var ErrFingerprint = errors.New("engine: the journal belongs to another series")

// OpenJournal opens reportDir's journal for a series of fingerprint fp.
// With resume, an existing journal of the same fingerprint is kept and one
// of another is refused with ErrFingerprint, naming what differs. Without
// it, the series starts afresh: any journal there is replaced when the
// first unit completes, so a process that runs nothing (make image, a
// smoke test) leaves an interrupted series' journal as it was.
func OpenJournal(reportDir string, fp Fingerprint, resume bool) (*Journal, report.Resume, error) {
	j := &Journal{dir: filepath.Join(reportDir, "journal"), fp: fp}
	res := report.Resume{Fingerprint: fp.Hash()}
	if !resume {
		j.fresh = true
		return j, res, nil
	}
	var old Fingerprint
	b, err := os.ReadFile(filepath.Join(j.dir, "fingerprint.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		j.fresh = true
		return j, res, nil
	case err != nil:
		return nil, res, fmt.Errorf("engine: read the journal: %w", err)
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, res, fmt.Errorf("engine: %s/fingerprint.json: %w; start afresh with make repro FRESH=1 (LAB_RESUME=0)", j.dir, err)
	}
	if d := old.differs(fp); len(d) > 0 {
		return nil, res, fmt.Errorf("%w in %s: it differs from this series in %s; "+
			"start afresh with make repro FRESH=1 (LAB_RESUME=0), or choose another LAB_REPORT_DIR",
			ErrFingerprint, j.dir, strings.Join(d, ", "))
	}
	units, err := j.units()
	if err != nil {
		return nil, res, err
	}
	res.Resumed, res.Kept = len(units) > 0, units
	j.resumable = map[string]bool{}
	for _, u := range units {
		j.resumable[u] = true
	}
	return j, res, nil
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
	if err := report.WriteFile(j.dir, "fingerprint.json", report.JSON(j.fp)); err != nil {
		return err
	}
	j.fresh = false
	return nil
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

// save writes v as unit key ("a/<condition>-run<k>", "b/<cell>").
func (j *Journal) save(key string, v any) error {
	if j == nil {
		return nil
	}
	if err := j.begin(); err != nil {
		return err
	}
	dir, name := filepath.Split(key)
	return report.WriteFile(filepath.Join(j.dir, dir), name+".json", report.JSON(v))
}

// load reads unit key into v; false when it is not journalled (or the
// series started afresh).
func (j *Journal) load(key string, v any) (bool, error) {
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
	b, err := os.ReadFile(filepath.Join(j.dir, key+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("engine: journal unit %s: %w", key, err)
	}
	j.mu.Lock()
	j.kept = append(j.kept, key)
	j.mu.Unlock()
	return true, nil
}

// fileRef is a journal unit that is a file written elsewhere (article A's
// raw record): its path relative to the report directory and its hash, so
// a record changed since is not taken for the unit.
type fileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// saveFile journals the file at rel (under the report directory) as key.
func (j *Journal) saveFile(key, rel string) error {
	if j == nil {
		return nil
	}
	sum, err := fileHash(filepath.Join(filepath.Dir(j.dir), rel))
	if err != nil {
		return err
	}
	return j.save(key, fileRef{Path: rel, SHA256: sum})
}

// loadFile decodes the file journalled as key into v.
func (j *Journal) loadFile(key string, v any) (bool, error) {
	var ref fileRef
	if ok, err := j.load(key, &ref); !ok || err != nil {
		return ok, err
	}
	path := filepath.Join(filepath.Dir(j.dir), ref.Path)
	sum, err := fileHash(path)
	if err != nil || sum != ref.SHA256 {
		return false, fmt.Errorf("engine: journal unit %s: %s changed or vanished since it was journalled (%v); "+
			"start afresh with make repro FRESH=1 (LAB_RESUME=0)", key, ref.Path, err)
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

func journalA(c Condition, k int) string { return fmt.Sprintf("a/%s-run%d", c.ID, k) }
func journalB(cell string) string        { return "b/" + cell }
