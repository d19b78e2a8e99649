package canonical

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestMarshal(t *testing.T) {
	type payment struct {
		Amount   float64           `json:"amount"`
		Currency string            `json:"currency"`
		Meta     map[string]string `json:"meta,omitempty"`
		Note     string            `json:"note"`
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"struct fields sorted", payment{Amount: 12.5, Currency: "EUR", Note: "<a&b>\u2028"},
			"{\"amount\":12.5,\"currency\":\"EUR\",\"note\":\"<a&b>\u2028\"}"},
		{"map", map[string]any{"b": []int{3, 1}, "a": nil, "\ue000": 1, "😀": 2},
			"{\"a\":null,\"b\":[3,1],\"😀\":2,\"\ue000\":1}"},
		{"float forms", []float64{1e21, 1e-7, 0.1, math.Copysign(0, -1), 100}, `[1e+21,1e-7,0.1,0,100]`},
		{"raw message", json.RawMessage(`{ "y" : 1.0 , "x" : 2 }`), `{"x":2,"y":1}`},
		{"string", "a\"b\\c\x01", `"a\"b\\c\u0001"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal\n got %s\nwant %s", got, tt.want)
			}
			// The contract: Marshal(v) == Transform(json.Marshal(v)).
			b, _ := json.Marshal(tt.v)
			viaTransform, err := Transform(b)
			if err != nil || string(viaTransform) != string(got) {
				t.Errorf("Transform(json.Marshal(v)) = %s, %v", viaTransform, err)
			}
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	if _, err := Marshal(math.NaN()); err == nil {
		t.Error("Marshal(NaN): no error")
	}
	var ue *json.UnsupportedValueError
	if _, err := Marshal(math.Inf(1)); !errors.As(err, &ue) {
		t.Errorf("Marshal(+Inf): %v, want a *json.UnsupportedValueError", err)
	}
	_, err := Marshal(json.RawMessage(`{"a":1,"a":2}`))
	var se *SyntaxError
	if !errors.Is(err, ErrDuplicateName) || !errors.As(err, &se) || se.Offset != 7 {
		t.Errorf("duplicate names from a RawMessage: %v", err)
	}
	_, err = Options{ExactNumbers: true}.Marshal(json.Number("9007199254740993"))
	if !errors.Is(err, ErrInexactNumber) {
		t.Errorf("ExactNumbers with json.Number: %v", err)
	}
}
