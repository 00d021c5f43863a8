package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
)

// Lab is what every run needs: the series' session on the engine, the lab
// image, the settings and the series' reports.
type Lab struct {
	Session  *stack.Session
	Image    string
	Settings Settings
	Reports  *Reports
}

// Record is a run's raw record, raw/<condition>-run<k>.json: everything
// the run collected, from which SummarizeRun derives its report rows.
type Record struct {
	Condition string                       `json:"condition"`
	Run       int                          `json:"run"`
	Pod       podspec.Config               `json:"pod"`
	Load      load.Result                  `json:"load"`
	Writes    map[string]stack.WriteRecord `json:"writes"`
	Client    probe.Inspection             `json:"client_inspection"`
	Sampler   *probe.Series                `json:"sampler,omitempty"`
	Started   time.Time                    `json:"started_at"`
}

// RunA runs condition c once, as run k, in a fresh pod: start the pod,
// start the /proc sampler, run the load from the client container, stop
// the sampler, collect the app's write records and the client's limits.
// It records the run and returns its summary; an error means the run
// could not be carried out at all (a run that ran but measured something
// wrong is returned as invalid).
func (l *Lab) RunA(t stack.TB, c Condition, k int) (report.Run, error) {
	t.Helper()
	if err := c.Validate(); err != nil {
		return report.Run{}, err
	}
	l.Reports.begin(c.ID)
	l.Reports.attemptA(c)
	rec := Record{Condition: c.ID, Run: k, Pod: c.Pod(l.Image), Started: time.Now()}
	pod := stack.Start(t, l.Session, rec.Pod, stack.Ident{Condition: c.ID, Run: k})

	spec, err := json.Marshal(c.Load(pod.URL(""), fmt.Sprintf("%s-r%d", c.ID, k)))
	if err != nil {
		return report.Run{}, err
	}
	sampling, err := pod.StartSampler(probe.DefaultInterval)
	if err != nil {
		return report.Run{}, err
	}
	loadErr := pod.ExecJSON(pod.Client, &rec.Load, image.AgentPath, "run", string(spec))
	series, err := sampling.Stop()
	if loadErr != nil || err != nil {
		return report.Run{}, errors.Join(wrap("load", loadErr), wrap("sampler", err))
	}
	rec.Sampler = &series
	if err := pod.OOMKilled(); err != nil {
		return report.Run{}, err
	}
	if rec.Writes, err = pod.Writes(); err != nil {
		return report.Run{}, err
	}
	if rec.Client, err = pod.Inspect(pod.Client); err != nil {
		return report.Run{}, err
	}
	return l.Reports.AddRun(c, rec)
}

// wrap prefixes err with what failed; nil stays nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
