package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

func exhaustionData(cs ...report.Condition) Data {
	d := Data{Conditions: map[string]report.Condition{}}
	for _, c := range cs {
		d.Conditions[c.ID] = c
	}
	return d
}

func TestNoSilentShortCatchesAShortBodyPresentedAsWhole(t *testing.T) {
	cut := report.Condition{ID: "full", Downloads: 8, RunsSound: 2, DownloadsTotal: 16, SlowOutcomes: map[string]int{"complete": 12, "truncated": 3, "reset": 1}}
	o, err := NoSilentShort("full").Eval(exhaustionData(cut))
	require.NoError(t, err)
	assert.True(t, o.Holds, "cut short, each detectably: %+v", o)
	assert.Contains(t, o.Threshold, "4 bodies cut short")

	silent := cut
	silent.SlowOutcomes = map[string]int{"complete": 15, "silent-short": 1}
	o, err = NoSilentShort("full").Eval(exhaustionData(silent))
	require.NoError(t, err)
	assert.False(t, o.Holds)
	assert.EqualValues(t, 1, o.Measured)

	_, err = NoSilentShort("full").Eval(exhaustionData(report.Condition{ID: "full"}))
	assert.ErrorContains(t, err, "no sound run")
}

func TestCutDetectably(t *testing.T) {
	c := report.Condition{ID: "full", Downloads: 8, RunsSound: 2, DownloadsTotal: 16, SlowOutcomes: map[string]int{"complete": 12, "truncated": 4},
		CutMin: 2, CutMax: 2}
	o, err := CutDetectably("full").Eval(exhaustionData(c))
	require.NoError(t, err)
	assert.True(t, o.Holds)
	assert.Equal(t, 2.0, o.Measured)
	c.CutMin, c.CutMax = 0, 4
	o, err = CutDetectably("full").Eval(exhaustionData(c))
	require.NoError(t, err)
	assert.False(t, o.Holds, "a run that cut no reader, however many the others cut")
	c.CutMin, c.CutMax = 2, 2
	for name, outcomes := range map[string]map[string]int{
		"none cut":        {"complete": 16},
		"one timed out":   {"complete": 11, "truncated": 4, "timeout": 1},
		"one cut quietly": {"complete": 11, "truncated": 4, "silent-short": 1},
	} {
		c.SlowOutcomes, c.CutMin = outcomes, 2
		if outcomes["truncated"] == 0 {
			c.CutMin = 0
		}
		o, err := CutDetectably("full").Eval(exhaustionData(c))
		require.NoError(t, err)
		assert.False(t, o.Holds, name)
	}
}

func TestFastServed(t *testing.T) {
	c := report.Condition{ID: "full", RunsSound: 1, RequestsTotal: 72, RequestsOK: 72, P95MsSound: 11}
	o, err := FastServed("full", FullTempFastMs).Eval(exhaustionData(c))
	require.NoError(t, err)
	assert.True(t, o.Holds)
	c.RequestsOK = 71
	o, _ = FastServed("full", FullTempFastMs).Eval(exhaustionData(c))
	assert.False(t, o.Holds, "a failed /fast request")
	c.RequestsOK, c.P95MsSound = 72, 19000
	o, _ = FastServed("full", FullTempFastMs).Eval(exhaustionData(c))
	assert.False(t, o.Holds, "a held worker")
}

func TestExhaustionVerdictsValidate(t *testing.T) {
	vs := Exhaustion(ExhaustionIDs{Below: "b", At: "a", Past: "p", FullTemp: "f", Fit: []string{"n"}}, 16, 0.9, "s")
	require.NoError(t, Validate(vs))
	v, ok := Find(vs, "temp-model-predicts-the-cliffs")
	require.True(t, ok)
	assert.Equal(t, []string{"p", "f", "n"}, v.Check.Needs(), "the model's verdict waits for the cell it is fitted on")
}
