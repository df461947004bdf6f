package testenv_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

func TestParallelCallsEachIndexOnceOnBoundedWorkers(t *testing.T) {
	const n = 1000
	var (
		mu                     sync.Mutex
		calls                  = map[int]int{}
		inFlight, mostInFlight int
	)
	err := testenv.Parallel(n, func(i int) error {
		mu.Lock()
		calls[i]++
		inFlight++
		mostInFlight = max(mostInFlight, inFlight)
		mu.Unlock()
		time.Sleep(time.Millisecond) // keep the call under way while others start
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	require.Len(t, calls, n)
	for i := range n {
		assert.Equal(t, 1, calls[i], "calls of do(%d)", i)
	}
	assert.LessOrEqual(t, mostInFlight, 16, "calls at the same time")
}

func TestParallelStopsAtTheFirstError(t *testing.T) {
	errCreate := errors.New("create failed")
	var calls atomic.Int64
	err := testenv.Parallel(1000, func(int) error {
		calls.Add(1)
		return errCreate
	})
	require.ErrorIs(t, err, errCreate)
	// Every worker stops at its first error, so no more than one call each is made.
	assert.LessOrEqual(t, calls.Load(), int64(16))
}

func TestParallelWithNothingToDo(t *testing.T) {
	require.NoError(t, testenv.Parallel(0, func(int) error { panic("called") }))
}
