package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingHandler counts how often values are attached (what slog's handlers format at once).
type countingHandler struct {
	slog.Handler
	withAttrs *int
}

func (h countingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	*h.withAttrs++
	return countingHandler{Handler: h.Handler.WithAttrs(attrs), withAttrs: h.withAttrs}
}

func (h countingHandler) WithGroup(name string) slog.Handler {
	return countingHandler{Handler: h.Handler.WithGroup(name), withAttrs: h.withAttrs}
}

// The request's values are formatted only when a line is written, and then every line carries
// them and what was added later, at the caller's source.
func TestRequestLoggerAttachesValuesOnlyToWrittenLines(t *testing.T) {
	var out bytes.Buffer
	attached := 0
	base := logr.FromSlogHandler(countingHandler{Handler: slog.NewJSONHandler(&out, &slog.HandlerOptions{AddSource: true}), withAttrs: &attached})

	log := requestLogger(base, "namespace", "shoot--a--b", "requestID", "42")
	later := log.WithValues("step", "decode").WithName("webhook")
	log.V(5).Info("received request") // below the handler's level: never formatted
	assert.Zero(t, attached, "nothing is formatted before a line is written")
	require.False(t, log.V(5).Enabled())

	later.Error(errors.New("boom"), "unable to decode the request")
	var line map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &line))
	assert.Equal(t, "shoot--a--b", line["namespace"])
	assert.Equal(t, "42", line["requestID"])
	assert.Equal(t, "decode", line["step"])
	assert.Equal(t, "boom", line["err"])
	source, _ := line["source"].(map[string]any)
	assert.Equal(t, "requestlog_test.go", baseName(source["file"]), "the source is the caller's line, not the sink's")
	assert.Equal(t, 1, attached, "the values are formatted once, for the line written")
}

func baseName(v any) string {
	s, _ := v.(string)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[i+1:]
		}
	}
	return s
}
