package controllerregistration

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}
