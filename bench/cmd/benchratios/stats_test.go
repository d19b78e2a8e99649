package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		xs   []float64
		want summary
	}{
		{[]float64{7}, summary{7, 7, 7}},
		{[]float64{3, 1, 2}, summary{2, 1, 3}},
		// Even count: the mean of the middle two, (2+4)/2.
		{[]float64{4, 1, 9, 2}, summary{3, 1, 9}},
		{[]float64{5, 5, 1, 5, 9, 5}, summary{5, 1, 9}},
	}
	for _, tt := range tests {
		xs := append([]float64(nil), tt.xs...)
		if got := summarize(xs); got != tt.want {
			t.Errorf("summarize(%v) = %v, want %v", tt.xs, got, tt.want)
		}
		if !reflect.DeepEqual(xs, tt.xs) {
			t.Errorf("summarize reordered its input: %v", xs)
		}
	}
}

func TestHinges(t *testing.T) {
	tests := []struct {
		xs     []float64
		lo, hi float64
	}{
		{[]float64{7}, 7, 7},
		{[]float64{2, 1}, 1, 2},
		// Odd count: the halves share the median, {1,2,3} and {3,4,5}.
		{[]float64{5, 3, 1, 4, 2}, 2, 4},
		// Even count: {1,2,3,4} and {5,6,7,8}.
		{[]float64{8, 1, 7, 2, 6, 3, 5, 4}, 2.5, 6.5},
	}
	for _, tt := range tests {
		xs := append([]float64(nil), tt.xs...)
		if lo, hi := hinges(xs); lo != tt.lo || hi != tt.hi {
			t.Errorf("hinges(%v) = %v, %v, want %v, %v", tt.xs, lo, hi, tt.lo, tt.hi)
		}
		if !reflect.DeepEqual(xs, tt.xs) {
			t.Errorf("hinges reordered its input: %v", xs)
		}
	}
}

// threeRounds: B is twice as fast as A in round 1 and 3, four times in
// round 2 (when A was slowed); C lacks ns/op in round 2 and is missing
// from round 3; Z has a zero time in round 1.
var threeRounds = []round{
	{"A": {"ns/op": 100, "cpu-ns/op": 80}, "B": {"ns/op": 50, "cpu-ns/op": 40}, "C": {"ns/op": 25, "cpu-ns/op": 10}, "Z": {"ns/op": 0}},
	{"A": {"ns/op": 400, "cpu-ns/op": 100}, "B": {"ns/op": 100, "cpu-ns/op": 50}, "C": {"cpu-ns/op": 20}, "Z": {"ns/op": 10}},
	{"A": {"ns/op": 120, "cpu-ns/op": 90}, "B": {"ns/op": 60, "cpu-ns/op": 30}, "Z": {"ns/op": 30}},
}

func TestSeries(t *testing.T) {
	tests := []struct {
		name, unit string
		want       []float64
	}{
		{"A", "ns/op", []float64{100, 400, 120}},
		{"C", "ns/op", []float64{25}},
		{"C", "cpu-ns/op", []float64{10, 20}},
		{"C", "allocs/op", nil},
		{"D", "ns/op", nil},
	}
	for _, tt := range tests {
		if got := series(threeRounds, tt.name, tt.unit); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("series(%s, %s) = %v, want %v", tt.name, tt.unit, got, tt.want)
		}
	}
}

func TestRatios(t *testing.T) {
	tests := []struct {
		num, den, unit string
		want           []float64
		sum            summary
	}{
		// Per round 100/50, 400/100, 120/60: the median is 2 where the
		// ratio of medians would be 120/60 too, but the spread shows
		// round 2.
		{"A", "B", "ns/op", []float64{2, 4, 2}, summary{2, 2, 4}},
		{"B", "A", "ns/op", []float64{0.5, 0.25, 0.5}, summary{0.5, 0.25, 0.5}},
		// 80/40, 100/50, 90/30.
		{"A", "B", "cpu-ns/op", []float64{2, 2, 3}, summary{2, 2, 3}},
		// C has ns/op in round 1 only: one ratio, 25/100.
		{"C", "A", "ns/op", []float64{0.25}, summary{0.25, 0.25, 0.25}},
		// 10/80, 20/100, and no round 3.
		{"C", "A", "cpu-ns/op", []float64{0.125, 0.2}, summary{0.1625, 0.125, 0.2}},
		// Z's zero in round 1 is left out: 400/10, 120/30.
		{"A", "Z", "ns/op", []float64{40, 4}, summary{22, 4, 40}},
		{"A", "A", "ns/op", []float64{1, 1, 1}, summary{1, 1, 1}},
	}
	for _, tt := range tests {
		got := ratios(threeRounds, tt.num, tt.den, tt.unit)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ratios(%s, %s, %s) = %v, want %v", tt.num, tt.den, tt.unit, got, tt.want)
		}
		f := &figures{rounds: threeRounds}
		if s := f.ratio(tt.num, tt.den, tt.unit); s != tt.sum || f.err != nil {
			t.Errorf("ratio(%s, %s, %s) = %v, %v; want %v", tt.num, tt.den, tt.unit, s, f.err, tt.sum)
		}
	}
}

func TestFiguresMissing(t *testing.T) {
	tests := []struct {
		name string
		get  func(f *figures) summary
		want string
	}{
		{"benchmark", func(f *figures) summary { return f.values("D", "ns/op") }, "D is in no round (of 3)"},
		{"unit", func(f *figures) summary { return f.values("A", "allocs/op") }, "A has no allocs/op in any round (of 3)"},
		{"numerator", func(f *figures) summary { return f.ratio("D", "A", "ns/op") }, "D is in no round (of 3)"},
		{"denominator", func(f *figures) summary { return f.ratio("A", "C", "allocs/op") }, "A has no allocs/op"},
		{"denominator's unit", func(f *figures) summary { return f.ratio("A", "C", "B/op") }, "A has no B/op"},
		// C has ns/op in round 1 and Z a zero there; elsewhere one lacks it.
		{"no common round", func(f *figures) summary { return f.ratio("C", "Z", "ns/op") }, "C over Z: no round has ns/op of both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &figures{rounds: threeRounds}
			if got := tt.get(f); got != (summary{}) {
				t.Errorf("got %v for a missing figure, want zeros", got)
			}
			if f.err == nil || !strings.Contains(f.err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", f.err, tt.want)
			}
			// The first missing figure is the one reported.
			first := f.err
			f.values("E", "ns/op")
			if f.err != first {
				t.Errorf("error replaced by %v", f.err)
			}
		})
	}
}
