package mcpcheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Call checks the response to a tools/call: a result that is no tool
// error.
func Call(body []byte) error {
	s, err := Scan(body)
	switch {
	case err != nil:
		return err
	case s.Error || !s.Result:
		return errors.New("no JSON-RPC result")
	case s.IsError:
		return errors.New("tool error")
	}
	return nil
}

// ListCheck checks tools/list responses: a result with Tools tools and a
// nextCursor exactly when More. A response equal to one it verified, but
// for its id, passes without a scan: a cached listing is the same bytes
// every time. It is safe for concurrent use.
type ListCheck struct {
	Tools int
	More  bool
	// ref is a verified response, split around its id.
	ref atomic.Pointer[[2][]byte]
}

// Check verifies one response.
func (c *ListCheck) Check(body []byte) error {
	before, after, ok := splitID(body)
	if ref := c.ref.Load(); ok && ref != nil && bytes.Equal(ref[0], before) && bytes.Equal(ref[1], after) {
		return nil
	}
	s, err := Scan(body)
	switch {
	case err != nil:
		return err
	case s.Error || !s.Result:
		return errors.New("no JSON-RPC result")
	case s.Tools != c.Tools || s.NextCursor != c.More:
		return fmt.Errorf("tools/list page of %d tools (nextCursor %t), want %d (%t)", s.Tools, s.NextCursor, c.Tools, c.More)
	}
	if ok {
		c.ref.Store(&[2][]byte{bytes.Clone(before), bytes.Clone(after)})
	}
	return nil
}

// splitID returns what precedes and follows the value of the "id" member
// when it is among the first members (as every server writes it).
func splitID(b []byte) (before, after []byte, ok bool) {
	head := b[:min(len(b), 64)]
	k := bytes.Index(head, []byte(`"id":`))
	if k < 0 {
		return nil, nil, false
	}
	start := skipSpace(b, k+len(`"id":`))
	end, err := skipValue(b, start)
	if err != nil {
		return nil, nil, false
	}
	return b[:start], b[end:], true
}

// Summary is what a load client checks in a JSON-RPC response.
type Summary struct {
	// Result and Error report which member the response has.
	Result, Error bool
	// IsError is the result's isError (a failed tool call).
	IsError bool
	// Tools is the number of elements of the result's tools array (-1
	// without one); NextCursor whether the result has one.
	Tools      int
	NextCursor bool
}

// Scan checks the structure of a JSON-RPC response object, skipping
// over values: strings by their closing quote, objects and arrays by their
// brackets. It is no full JSON validation, but a truncated or garbled
// envelope fails.
func Scan(b []byte) (Summary, error) {
	s := Summary{Tools: -1}
	end, err := scanObject(b, 0, func(key string, i int) (int, error) {
		switch key {
		case "error":
			s.Error = true
		case "result":
			s.Result = true
			if i < len(b) && b[i] == '{' {
				return scanObject(b, i, func(key string, i int) (int, error) {
					switch {
					case key == "isError":
						s.IsError = bytes.HasPrefix(b[i:], []byte("true"))
					case key == "nextCursor":
						s.NextCursor = true
					case key == "tools" && i < len(b) && b[i] == '[':
						s.Tools = 0
						return scanArray(b, i, func(i int) (int, error) {
							s.Tools++
							return skipValue(b, i)
						})
					}
					return skipValue(b, i)
				})
			}
		}
		return skipValue(b, i)
	})
	if err == nil && skipSpace(b, end) != len(b) {
		err = errMalformed
	}
	return s, err
}

var errMalformed = errors.New("malformed JSON")

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanObject calls member with each key and the offset of its value, which
// member returns the end of; it returns the offset after the object.
func scanObject(b []byte, i int, member func(key string, i int) (int, error)) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, errMalformed
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errMalformed
		}
		end, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		key := string(b[i+1 : end-1])
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, errMalformed
		}
		if i, err = member(key, skipSpace(b, i+1)); err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return i + 1, nil
		default:
			return 0, errMalformed
		}
	}
}

// scanArray calls elem with the offset of each element, which elem
// returns the end of; it returns the offset after the array.
func scanArray(b []byte, i int, elem func(i int) (int, error)) (int, error) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = elem(i); err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return i + 1, nil
		default:
			return 0, errMalformed
		}
	}
}

// skipString returns the offset after the string starting at b[i].
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errMalformed
		}
		j += k
		escapes := 0
		for b[j-1-escapes] == '\\' {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// skipValue returns the offset after the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errMalformed
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errMalformed
	}
	j := i
	for j < len(b) && strings.IndexByte(",}] \t\r\n", b[j]) < 0 {
		j++
	}
	if j == i {
		return 0, errMalformed
	}
	return j, nil
}
