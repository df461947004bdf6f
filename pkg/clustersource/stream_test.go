package clustersource

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// A watch stream is read as the server writes it: objects, bookmarks, an ERROR's Status as the
// API error it carries (the 410 that makes the watcher begin anew), then the end.
func TestJSONStreamReadsTheServersEvents(t *testing.T) {
	body := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","resourceVersion":"7"}}}
{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"9"}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (9)","reason":"Expired","code":410}}
`
	s := newJSONStream(io.NopCloser(strings.NewReader(body)))
	e, err := s.Next()
	require.NoError(t, err)
	assert.Equal(t, watch.Added, e.Type)
	assert.Equal(t, "a", e.Object.(*unstructured.Unstructured).GetName())
	e, err = s.Next()
	require.NoError(t, err)
	assert.Equal(t, watch.Bookmark, e.Type)
	assert.Equal(t, "9", e.Object.(*unstructured.Unstructured).GetResourceVersion())
	e, err = s.Next()
	require.NoError(t, err)
	assert.Equal(t, watch.Error, e.Type)
	assert.True(t, apierrors.IsResourceExpired(apierrors.FromObject(e.Object)))
	_, err = s.Next()
	assert.ErrorIs(t, err, io.EOF)

	s = newJSONStream(io.NopCloser(strings.NewReader(`{"type":"ADDED","object":{"kind":`)))
	_, err = s.Next()
	require.Error(t, err)
	assert.NotErrorIs(t, err, io.EOF, "a stream cut in an event is a failure, not the server's end")
}
