package chart

import (
	"container/list"
	"sync"
)

// cache holds pulled chart archives by digest reference, least recently used first out, bounded
// in total bytes: a function instance pulls each chart version once and memory stays bounded
// however many ControllerDeployments the garden has.
type cache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	order    *list.List // of *entry, most recently used at the front
	entries  map[string]*list.Element
}

type entry struct {
	key     string
	archive []byte
}

func newCache(maxBytes int) *cache {
	return &cache{maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *cache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry).archive, true
}

// add keeps archive unless it alone exceeds the bound, evicting the least recently used.
func (c *cache) add(key string, archive []byte) {
	if len(archive) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.entries[key] = c.order.PushFront(&entry{key: key, archive: archive})
	c.bytes += len(archive)
	for c.bytes > c.maxBytes {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		evicted := oldest.Value.(*entry)
		delete(c.entries, evicted.key)
		c.bytes -= len(evicted.archive)
	}
}

func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
