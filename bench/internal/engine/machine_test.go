package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadMachine(t *testing.T) {
	m, err := ReadMachine("../../../fixtures/machine/a", "../../../fixtures/machine/b", time.Second, nil)
	require.NoError(t, err)
	assert.Equal(t, "AMD EPYC", m.CPUModel)
	assert.Equal(t, 2, m.CPUs)
	assert.InDelta(t, 0.15, m.BusyShare, 1e-9, "0.3 s busy of 2 s")
	assert.InDelta(t, 0.05, m.StealShare, 1e-9, "0.1 s stolen of 2 s")
	assert.InDelta(t, 0.60, m.LoadAvg1, 1e-9)
	assert.Contains(t, m.Busy, "other programs used 15 % of the CPU")

	_, err = ReadMachine("../../../fixtures/machine/a", "../../../fixtures/machine/a", time.Second, nil)
	assert.ErrorContains(t, err, "no CPU time passed")
	_, err = ReadMachine("../../../fixtures/machine/nope", "../../../fixtures/machine/b", time.Second, nil)
	assert.Error(t, err)
}

func TestCalibrate(t *testing.T) {
	assert.Positive(t, Calibrate())
}
