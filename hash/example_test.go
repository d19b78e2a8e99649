package hash_test

import (
	"fmt"

	"github.com/idemledger/idemledger/hash"
)

func ExampleJSON() {
	a, _ := hash.JSON([]byte(`{"b": 2, "a": 1.0}`))
	b, _ := hash.JSON([]byte(`{"a":1,"b":2}`))
	fmt.Println(a == b)
	fmt.Println(a)
	// Output:
	// true
	// 43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777
}

func ExampleValue() {
	d, err := hash.Value(map[string]any{"b": 2, "a": 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d)
	// Output: 43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777
}

func ExampleRequest() {
	first := hash.Request("POST", "/v1/payments", "application/json; charset=utf-8", []byte(`{"amount": 100, "currency": "eur"}`))
	retry := hash.Request("post", "/v1/payments", "application/json", []byte(`{"currency":"eur","amount":100}`))
	other := hash.Request("POST", "/v1/payments", "application/json", []byte(`{"currency":"eur","amount":101}`))
	fmt.Println(first == retry, first == other)

	// Two amounts that binary64 cannot tell apart still differ here.
	big1 := hash.Request("POST", "/v1/payments", "application/json", []byte(`{"amount":9007199254740993}`))
	big2 := hash.Request("POST", "/v1/payments", "application/json", []byte(`{"amount":9007199254740992}`))
	fmt.Println(big1 == big2)
	// Output:
	// true false
	// false
}

func ExampleDeriveKey() {
	key := hash.DeriveKey("msg-123", "charge-card")
	fmt.Println(key, len(key))
	fmt.Println(hash.DeriveKey("ab", "c") == hash.DeriveKey("a", "bc"))
	// Output:
	// 9bd2c2607625ad6768076b82ab968688afd4a48d494908ef1613022a9e3f3b4f 64
	// false
}

func ExampleParseDigest() {
	d, err := hash.ParseDigest("43258CFF783FE7036D8A43033F830ADFC60EC037382473548AC742B888292777")
	fmt.Println(d, err)
	_, err = hash.ParseDigest("xyz")
	fmt.Println(err)
	// Output:
	// 43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777 <nil>
	// hash: invalid digest: want 64 hex digits, got 3 bytes
}
