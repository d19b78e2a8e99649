package canonical_test

import (
	"errors"
	"fmt"

	"github.com/idemledger/idemledger/canonical"
)

func ExampleTransform() {
	out, err := canonical.Transform([]byte(`{
		"amount": 12.50,
		"currency": "EUR",
		"\u0061ccount": "acct_1",
		"tags": ["a\/b", 1e21, -0]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output: {"account":"acct_1","amount":12.5,"currency":"EUR","tags":["a/b",1e+21,0]}
}

func ExampleTransform_refusal() {
	_, err := canonical.Transform([]byte(`{"id":1,"\u0069d":2}`))
	var se *canonical.SyntaxError
	if errors.As(err, &se) {
		fmt.Println(errors.Is(err, canonical.ErrDuplicateName), se.Offset)
	}
	fmt.Println(err)
	// Output:
	// true 8
	// canonical: duplicate member name at offset 8
}

func ExampleAppend() {
	var buf []byte
	for _, doc := range []string{`{"b":2,"a":1}`, `[1.0, 2.50]`} {
		var err error
		buf, err = canonical.Append(buf[:0], []byte(doc))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(buf))
	}
	// Output:
	// {"a":1,"b":2}
	// [1,2.5]
}

func ExampleFormatFloat() {
	for _, f := range []float64{1e21, 1e20, 1e-7, 0.000001, 5e-324, 123456789012345680000, 1.0 / 3} {
		s, _ := canonical.FormatFloat(f)
		fmt.Println(s)
	}
	// Output:
	// 1e+21
	// 100000000000000000000
	// 1e-7
	// 0.000001
	// 5e-324
	// 123456789012345680000
	// 0.3333333333333333
}

func ExampleMarshal() {
	type order struct {
		Total float64           `json:"total"`
		Items []string          `json:"items"`
		Meta  map[string]string `json:"meta"`
	}
	out, err := canonical.Marshal(order{Total: 99.9, Items: []string{"<tea>"}, Meta: map[string]string{"z": "1", "a": "2"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output: {"items":["<tea>"],"meta":{"a":"2","z":"1"},"total":99.9}
}

func ExampleOptions_exactNumbers() {
	exact := canonical.Options{ExactNumbers: true}
	for _, doc := range []string{`{"amount":1.50}`, `{"amount":9007199254740993}`} {
		out, err := exact.Transform([]byte(doc))
		fmt.Println(string(out), errors.Is(err, canonical.ErrInexactNumber))
	}
	plain, _ := canonical.Transform([]byte(`{"amount":9007199254740993}`))
	fmt.Println(string(plain))
	// Output:
	// {"amount":1.5} false
	//  true
	// {"amount":9007199254740992}
}

func ExampleOptions_maxDepth() {
	_, err := canonical.Options{MaxDepth: 2}.Transform([]byte(`[[["too deep"]]]`))
	fmt.Println(err)
	// Output: canonical: nesting too deep at offset 2
}

// By default a Unicode noncharacter is kept, as V8 keeps it; strict I-JSON
// (RFC 7493 section 2.1) refuses it.
func ExampleOptions_refuseNoncharacters() {
	doc := []byte(`{"note":"\uffff"}`)
	out, err := canonical.Transform(doc)
	fmt.Printf("%+q %v\n", out, err)
	_, err = canonical.Options{RefuseNoncharacters: true}.Transform(doc)
	fmt.Println(err)
	// Output:
	// "{\"note\":\"\uffff\"}" <nil>
	// canonical: Unicode noncharacter in string at offset 9
}
