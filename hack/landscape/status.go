package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"golang.org/x/term"
)

// status digests the functions' JSON log lines into one live line.
type status struct {
	out      io.Writer
	terminal bool
	mu       sync.Mutex
	counts   map[string]*counts
	last     string
	printed  string
}

type counts struct{ events, sweeps, deleted, failed int }

func newStatus(out *os.File) *status {
	return &status{out: out, terminal: term.IsTerminal(int(out.Fd())), counts: map[string]*counts{}}
}

// functionOutput tees a function's log to its file and digests each line.
func (s *status) functionOutput(name, logFile string) io.Writer {
	f, err := os.Create(logFile)
	if err != nil {
		f = nil
	}
	r, w := io.Pipe()
	go func() {
		scanner := bufio.NewScanner(r)
		scanner.Buffer(make([]byte, 64<<10), 1<<20)
		for scanner.Scan() {
			line := scanner.Bytes()
			if f != nil {
				_, _ = f.Write(append(line, '\n'))
			}
			s.digest(name, line)
		}
	}()
	return w
}

func (s *status) digest(function string, line []byte) {
	var entry map[string]any
	if json.Unmarshal(line, &entry) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts[function]
	if c == nil {
		c = &counts{}
		s.counts[function] = c
	}
	msg, _ := entry["msg"].(string)
	switch msg {
	case "event handled":
		c.events++
	case "event failed, sender will retry", "event rejected", "event not handled":
		c.events++
		c.failed++
		s.last = fmt.Sprintf("%s: %s (%v)", function, msg, entry["reason"])
	case "sweep done":
		c.sweeps++
	case "deleting bastion":
		c.deleted++
		s.last = fmt.Sprintf("%s: deleted %s/%s (%v)", function, nested(entry["bastion"], "Namespace"), nested(entry["bastion"], "Name"), entry["reason"])
	}
}

func nested(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		return m[key]
	}
	return ""
}

func (s *status) print() {
	s.mu.Lock()
	names := make([]string, 0, len(s.counts))
	for name := range s.counts {
		names = append(names, name)
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		c := s.counts[name]
		parts = append(parts, fmt.Sprintf("%s: %d events, %d sweeps, %d deleted, %d failed", name, c.events, c.sweeps, c.deleted, c.failed))
	}
	line := strings.Join(parts, " | ")
	if s.last != "" {
		line += " | last: " + s.last
	}
	s.mu.Unlock()
	if line == s.printed {
		return
	}
	s.printed = line
	if s.terminal {
		fmt.Fprintf(s.out, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(s.out, line)
	}
}
