package main

import (
	"fmt"
	"slices"
)

// A summary is the median of a sample with its lowest and highest values.
type summary struct {
	med, min, max float64
}

// summarize returns the summary of a non-empty sample.
func summarize(xs []float64) summary {
	return summary{median(xs), slices.Min(xs), slices.Max(xs)}
}

// median of a non-empty sample; the mean of the middle two for an even
// count, as benchstat and benchtable report it.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// series returns the unit's values of the benchmark name in round order,
// leaving out the rounds that lack them.
func series(rounds []round, name, unit string) []float64 {
	var xs []float64
	for _, r := range rounds {
		if x, ok := r[name][unit]; ok {
			xs = append(xs, x)
		}
	}
	return xs
}

// ratios returns, for every round that measured unit for both num and
// den, num's value over den's from that round. Taking the ratio within a
// round, a few seconds apart, cancels load that drifts between rounds. A
// zero denominator counts as not measured rather than as an infinite
// ratio.
func ratios(rounds []round, num, den, unit string) []float64 {
	var xs []float64
	for _, r := range rounds {
		a, okA := r[num][unit]
		b, okB := r[den][unit]
		if okA && okB && b != 0 {
			xs = append(xs, a/b)
		}
	}
	return xs
}

// figures reads summaries out of rounds for a table and keeps the first
// figure it could not find as its error, so that a table's code reads as
// the table it prints and is checked once at the end.
type figures struct {
	rounds []round
	err    error
}

// values summarizes the unit's values of benchmark name across rounds.
func (f *figures) values(name, unit string) summary {
	xs := series(f.rounds, name, unit)
	if len(xs) == 0 {
		f.fail(f.missing(name, unit))
		return summary{}
	}
	return summarize(xs)
}

// ratio summarizes the per-round ratios of num's unit to den's.
func (f *figures) ratio(num, den, unit string) summary {
	xs := ratios(f.rounds, num, den, unit)
	if len(xs) == 0 {
		err := f.missing(num, unit)
		if err == nil {
			err = f.missing(den, unit)
		}
		if err == nil {
			err = fmt.Errorf("%s over %s: no round has %s of both", num, den, unit)
		}
		f.fail(err)
		return summary{}
	}
	return summarize(xs)
}

// ratioUnits summarizes, for benchmark name, the per-round ratios of its
// num unit to its den unit.
func (f *figures) ratioUnits(name, num, den string) summary {
	var xs []float64
	for _, r := range f.rounds {
		a, okA := r[name][num]
		b, okB := r[name][den]
		if okA && okB && b != 0 {
			xs = append(xs, a/b)
		}
	}
	if len(xs) == 0 {
		err := f.missing(name, num)
		if err == nil {
			err = f.missing(name, den)
		}
		if err == nil {
			err = fmt.Errorf("%s: no round has both %s and %s", name, num, den)
		}
		f.fail(err)
		return summary{}
	}
	return summarize(xs)
}

// missing says what the rounds lack when the benchmark name has no
// values of unit in any of them, and is nil when it has some.
func (f *figures) missing(name, unit string) error {
	ran := false
	for _, r := range f.rounds {
		m, ok := r[name]
		if _, has := m[unit]; has {
			return nil
		}
		ran = ran || ok
	}
	if !ran {
		return fmt.Errorf("%s is in no round (of %d)", name, len(f.rounds))
	}
	return fmt.Errorf("%s has no %s in any round (of %d)", name, unit, len(f.rounds))
}

func (f *figures) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// hinges returns the lower and upper quartiles of a non-empty sample as
// Tukey's hinges: the medians of its lower and upper halves, each half
// including the middle value when the count is odd.
func hinges(xs []float64) (lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	half := (len(s) + 1) / 2
	return median(s[:half]), median(s[len(s)-half:])
}

// quartiles returns the hinges of the per-round ratios of num's unit to
// den's.
func (f *figures) quartiles(num, den, unit string) [2]float64 {
	xs := ratios(f.rounds, num, den, unit)
	if len(xs) == 0 {
		f.ratio(num, den, unit) // records why
		return [2]float64{}
	}
	lo, hi := hinges(xs)
	return [2]float64{lo, hi}
}
