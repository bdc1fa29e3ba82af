package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Values is a series of measurements, one per run or leg, in which NaN
// marks a value that could not be measured. JSON has no NaN, so a missing
// value is written as null and null reads back as NaN: a run that measured
// nothing stays missing and is never read back as 0.
type Values []float64

// MarshalJSON writes the values with null for NaN; an infinite value is an
// error (no JSON number holds it, and no gate figure is infinite).
func (v Values) MarshalJSON() ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case math.IsNaN(x):
			b.WriteString("null")
		case math.IsInf(x, 0):
			return nil, fmt.Errorf("value %d is %v: not representable in JSON", i, x)
		default:
			// encoding/json's own float format, so a file reads the same
			// whether a number went through Values or a plain float64.
			n, err := json.Marshal(x)
			if err != nil {
				return nil, err
			}
			b.Write(n)
		}
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an array of numbers and nulls (null = NaN).
func (v *Values) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*v = nil
		return nil
	}
	var raw []*float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(Values, len(raw))
	for i, p := range raw {
		out[i] = math.NaN()
		if p != nil {
			out[i] = *p
		}
	}
	*v = out
	return nil
}

// Present returns the values that were measured (NaN dropped), in order.
func (v Values) Present() []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}
