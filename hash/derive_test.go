package hash

import "testing"

// Goldens from testdata/golden.sh (printf and sha256sum over the layout
// documented on DeriveKey).
func TestDeriveKey(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"msg-123", "charge-card"}, "9bd2c2607625ad6768076b82ab968688afd4a48d494908ef1613022a9e3f3b4f"},
		{[]string{"ab", "c"}, "7a97758b07107e4e6f6a1b5e2db3f5caabd695fb9ceeea61ad2d5fdf58253dba"},
		{[]string{"a", "bc"}, "2de211c92ace9512c1d71d414815db780a045d5ff664f72e7a0cf9dbd8db9042"},
		{nil, "bbd5b7d747829c9b72951c260b9df5298ce4c8d28958798908c7e46fe11f08fb"},
		{[]string{""}, "bb109104b90c0681eb1d07d599815024e8161eb4469e85ac0da6300783740be3"},
	}
	for _, tt := range tests {
		got := DeriveKey(tt.parts...)
		if got != tt.want {
			t.Errorf("DeriveKey(%q) = %s, want %s", tt.parts, got, tt.want)
		}
		if len(got) != 64 {
			t.Errorf("DeriveKey(%q) has %d bytes, want 64", tt.parts, len(got))
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x21 || c > 0x7e {
				t.Errorf("DeriveKey(%q) byte %d is %#x, not printable ASCII", tt.parts, i, c)
			}
		}
	}
}
