package main

import (
	"fmt"
	"strconv"
	"strings"
)

// num formats a figure to about three significant digits, which is as
// many as rounds on a shared machine support: a whole number from 100 up,
// with thousands separators ("1,322"), one decimal from 10 ("52.1"), two
// below ("0.73"). Rounding is to nearest, ties to even. The choice of
// precision looks at x before rounding, so 99.96 prints as "100.0".
func num(x float64) string {
	switch {
	case x >= 100:
		return thousands(strconv.FormatFloat(x, 'f', 0, 64))
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// thousands puts a comma between each group of three digits of an
// unsigned whole number.
func thousands(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// micro formats nanoseconds as microseconds.
func micro(ns float64) string {
	return num(ns / 1000)
}

// spread formats a summary as "median (min–max)".
func spread(s summary, format func(float64) string) string {
	return fmt.Sprintf("%s (%s–%s)", format(s.med), format(s.min), format(s.max))
}

// times formats a summary of ratios with two decimals: "0.73 (0.65–0.88)".
func times(s summary) string {
	return fmt.Sprintf("%.2f (%.2f–%.2f)", s.med, s.min, s.max)
}
