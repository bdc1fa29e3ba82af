package report

import (
	"encoding/json"
	"strings"
)

// splitObject returns the members of the JSON object b as
// json.Unmarshal into a map[string]json.RawMessage would (a later
// duplicate key wins; each value's bytes as they are), and whether b
// looked like an object. It does not validate: ParseServerTick uses it
// only for a document json.Unmarshal has just decoded, which saves the
// second pass of encoding/json's validator over a metrics document a
// swarm reads every second. FuzzSplitObjectMatchesJSON holds it to
// encoding/json on every valid object.
func splitObject(b []byte) (map[string]json.RawMessage, bool) {
	s := jsonSplit{b: b}
	if !s.next('{') {
		return nil, false
	}
	raw := map[string]json.RawMessage{}
	if s.next('}') {
		return raw, s.end()
	}
	for {
		key, ok := s.key()
		if !ok || !s.next(':') {
			return nil, false
		}
		s.space()
		start := s.i
		if !s.value() {
			return nil, false
		}
		raw[key] = json.RawMessage(b[start:s.i])
		if s.next('}') {
			return raw, s.end()
		}
		if !s.next(',') {
			return nil, false
		}
	}
}

// jsonSplit walks the top level of a JSON object.
type jsonSplit struct {
	b []byte
	i int
}

func (s *jsonSplit) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

// next consumes c (after white space) when it comes next.
func (s *jsonSplit) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonSplit) end() bool {
	s.space()
	return s.i == len(s.b)
}

// key consumes a member's name, unescaped as encoding/json does.
func (s *jsonSplit) key() (string, bool) {
	s.space()
	start := s.i
	if !s.str() {
		return "", false
	}
	tok := s.b[start:s.i]
	if plainKey(tok) {
		return string(tok[1 : len(tok)-1]), true
	}
	var k string
	if err := json.Unmarshal(tok, &k); err != nil {
		return "", false
	}
	return k, true
}

// plainKey reports whether a quoted name is what it says: ASCII without
// escapes (encoding/json unescapes the rest and replaces invalid UTF-8).
func plainKey(tok []byte) bool {
	for _, c := range tok {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// str consumes a string, its quotes and escapes.
func (s *jsonSplit) str() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return true
		}
	}
	return false
}

// value consumes one value: a string, an object or array with all it
// nests, or a literal or number (up to the next delimiter).
func (s *jsonSplit) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.str() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return true
			}
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) && !strings.ContainsRune(",}] \n\t\r", rune(s.b[s.i])) {
		s.i++
	}
	return s.i > start
}
