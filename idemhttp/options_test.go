package idemhttp

import "testing"

func TestStorePolicies(t *testing.T) {
	tests := []struct {
		status                                  int
		storeDefault, serverErrors, successOnly bool
	}{
		{100, true, true, false},
		{200, true, true, true},
		{201, true, true, true},
		{204, true, true, true},
		{299, true, true, true},
		{301, true, true, false},
		{304, true, true, false},
		{400, true, true, false},
		{404, true, true, false},
		{408, false, false, false},
		{409, false, false, false},
		{422, true, true, false},
		{425, false, false, false},
		{429, false, false, false},
		{499, false, false, false},
		{500, false, true, false},
		{502, false, true, false},
		{503, false, false, false},
		{504, false, true, false},
	}
	for _, tt := range tests {
		if got := StoreDefault(tt.status); got != tt.storeDefault {
			t.Errorf("StoreDefault(%d) = %v", tt.status, got)
		}
		if got := StoreServerErrors(tt.status); got != tt.serverErrors {
			t.Errorf("StoreServerErrors(%d) = %v", tt.status, got)
		}
		if got := StoreSuccess(tt.status); got != tt.successOnly {
			t.Errorf("StoreSuccess(%d) = %v", tt.status, got)
		}
	}
}
