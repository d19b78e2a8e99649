package main

import "testing"

func TestNum(t *testing.T) {
	tests := []struct {
		x    float64
		want string
	}{
		{0, "0.00"},
		{0.734, "0.73"},
		{0.125, "0.12"}, // a tie, exact in binary: to even
		{0.375, "0.38"},
		{9.994, "9.99"},
		{9.996, "10.00"}, // the precision is chosen before rounding
		{10, "10.0"},
		{52.14, "52.1"},
		{99.96, "100.0"},
		{100, "100"},
		{100.5, "100"}, // ties to even, as in the tables of BENCHMARKS.md
		{101.5, "102"},
		{368.4, "368"},
		{999.5, "1,000"},
		{1322.2, "1,322"},
		{73092.4, "73,092"},
		{1234567, "1,234,567"},
	}
	for _, tt := range tests {
		if got := num(tt.x); got != tt.want {
			t.Errorf("num(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[string]string{
		"1": "1", "12": "12", "123": "123", "1234": "1,234",
		"123456": "123,456", "1234567": "1,234,567",
	} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSummaryFormats(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{micro(368000), "368"},
		{micro(94512), "94.5"},
		{micro(1322400), "1,322"},
		{spread(summary{368123, 331000, 555499}, micro), "368 (331–555)"},
		{spread(summary{117000, 94500, 158000}, micro), "117 (94.5–158)"},
		{spread(summary{73092, 58234.4, 92231}, num), "73,092 (58,234–92,231)"},
		{times(summary{0.7261, 0.6549, 0.88}), "0.73 (0.65–0.88)"},
		{times(summary{1, 1, 1}), "1.00 (1.00–1.00)"},
		{times(summary{4.06, 3.455, 4.66}), "4.06 (3.46–4.66)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
