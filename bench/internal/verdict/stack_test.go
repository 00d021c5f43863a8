package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// runs makes a step's summary: valid runs with these p95s, and failed
// sound runs (a /fast request or a slow client failed).
func runs(id string, failed int, p95s ...float64) report.Condition {
	return report.Condition{ID: id, RunsSound: len(p95s) + failed, RunsValid: len(p95s), RunsTotal: len(p95s) + failed,
		P95MsRuns: p95s, P95Ms: median(p95s)}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}

func TestStep(t *testing.T) {
	for name, tc := range map[string]struct {
		c    report.Condition
		want StepState
	}{
		"held":                {runs("s", 0, 2.1), StepHeld},
		"one failed run":      {runs("s", 1), StepUndecided},
		"two failed runs":     {runs("s", 2), StepBroken},
		"one broke alone":     {runs("s", 0, 5900), StepUndecided},
		"two broke":           {runs("s", 0, 5900, 5800), StepBroken},
		"one noisy run of 2":  {runs("s", 0, 2.1, 80), StepUndecided},
		"majority of 3 held":  {runs("s", 0, 2.1, 80, 3.0), StepHeld},
		"majority of 3 broke": {runs("s", 1, 2.1, 80), StepBroken},
	} {
		t.Run(name, func(t *testing.T) {
			got, _, err := Step(tc.c, 50)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, _, err := Step(report.Condition{ID: "s", RunsTotal: 1}, 50)
	assert.ErrorIs(t, err, ErrNoStepData, "an unsound run decides nothing")
}

// The requirement never passes on missing data: a step up to the
// requirement that did not run (with no step above it held) or has no
// sound run fails as missing; steps past the first broken one need not
// run, nor those below a step that held (the bracket RunStack runs).
func TestStackRequirement(t *testing.T) {
	steps := []string{"s1", "s2", "s3"}
	check := StackRequirement("s0", steps, []int{1, 2, 3}, 2, 50)
	data := func(cs ...report.Condition) Data {
		d := Data{Conditions: map[string]report.Condition{}}
		for _, c := range cs {
			d.Conditions[c.ID] = c
		}
		return d
	}
	claim := func(d Data) report.Claim {
		return Evaluate([]Verdict{{ID: "r", Kind: Lab, Check: check}}, d)[0]
	}

	c := claim(data(runs("s0", 0, 2), runs("s1", 0, 2), runs("s2", 0, 3), runs("s3", 0, 4)))
	assert.Equal(t, report.StatusHolds, c.Status)
	assert.EqualValues(t, 3, c.Measured, "held up to 3, one past the requirement")

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 2), runs("s2", 0, 5900, 5800)))
	assert.Equal(t, report.StatusFails, c.Status, "stalls at 2: s3 need not run")
	assert.EqualValues(t, 1, c.Measured)

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 2), runs("s2", 0, 3)))
	assert.Equal(t, report.StatusHolds, c.Status, "the step past the requirement may be missing")

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 2)))
	assert.Equal(t, report.StatusMissing, c.Status, "s2 never ran and nothing broke before it")

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 2), report.Condition{ID: "s2", RunsTotal: 2}))
	assert.Equal(t, report.StatusMissing, c.Status, "s2 ran but no run was sound")

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 2), runs("s2", 0, 3), report.Condition{ID: "s3", RunsTotal: 1}))
	assert.Equal(t, report.StatusHolds, c.Status, "the step past the requirement without data bounds nothing")
	assert.EqualValues(t, 2, c.Measured)

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 2), runs("s2", 0, 3), runs("s3", 0, 2, 900)))
	assert.Equal(t, report.StatusHolds, c.Status, "an undecided step past the requirement does not fail it")

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 2), runs("s2", 0, 900)))
	assert.Equal(t, report.StatusMissing, c.Status, "one run that broke alone decides nothing")

	c = claim(data(runs("s0", 0, 900, 950)))
	assert.Equal(t, report.StatusFails, c.Status, "the baseline broke")
	assert.EqualValues(t, -1, c.Measured)

	c = claim(data())
	assert.Equal(t, report.StatusNotRun, c.Status, "a check never started is not run")

	// The bracket: the required step first, then the one past it.
	c = claim(data(runs("s0", 0, 2), runs("s2", 0, 3), runs("s3", 0, 4)))
	assert.Equal(t, report.StatusHolds, c.Status, "s1 is held by implication: s2 held")
	assert.EqualValues(t, 3, c.Measured)

	c = claim(data(runs("s0", 0, 2), runs("s2", 0, 3), runs("s3", 0, 5900, 5800)))
	assert.Equal(t, report.StatusHolds, c.Status, "stalls past the requirement")
	assert.EqualValues(t, 2, c.Measured, "the bracket is 2 to 3")

	c = claim(data(runs("s0", 0, 2), runs("s1", 0, 900, 950), runs("s2", 0, 5900, 5800)))
	assert.Equal(t, report.StatusFails, c.Status, "broke at 2, then at 1 on the way up")
	assert.EqualValues(t, 0, c.Measured)

	c = claim(data(runs("s0", 0, 2), runs("s2", 0, 5900, 5800)))
	assert.Equal(t, report.StatusMissing, c.Status, "broke at 2, and 1 never ran: nothing held above it")

	c = claim(data(runs("s0", 0, 2), runs("s3", 0, 4)))
	assert.Equal(t, report.StatusHolds, c.Status, "a step held past the requirement implies those below it too")
	assert.EqualValues(t, 3, c.Measured)
}

// Past 16 the steps are geometric: the measured value is the clients of
// the last step held, the bracket's lower side.
func TestStackRequirementGeometric(t *testing.T) {
	steps := []string{"s16", "s32", "s40", "s64"}
	check := StackRequirement("s0", steps, []int{16, 32, 40, 64}, 40, 50)
	d := Data{Conditions: map[string]report.Condition{}}
	for _, c := range []report.Condition{runs("s0", 0, 2), runs("s16", 0, 2), runs("s32", 0, 3), runs("s40", 0, 5900, 5800)} {
		d.Conditions[c.ID] = c
	}
	c := Evaluate([]Verdict{{ID: "r", Kind: Lab, Check: check}}, d)[0]
	assert.Equal(t, report.StatusFails, c.Status, "broken at the requirement, 40")
	assert.EqualValues(t, 32, c.Measured, "held up to 32: the bracket is 32 to 40")
	bad := StackRequirement("s0", steps, []int{16, 32}, 40, 50)
	assert.Equal(t, report.StatusMissing, Evaluate([]Verdict{{ID: "r", Kind: Lab, Check: bad}}, d)[0].Status, "steps and counts must pair")
}
