package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Input is one benchmark document.
type Input struct {
	// Name is the sub-benchmark name: shape and approximate size.
	Name string
	// Data is the JSON text, valid I-JSON (RFC 7493) so that every
	// canonicalizer, strict or not, can accept it.
	Data []byte
}

// Inputs returns the four benchmark documents, generated from fixed seeds:
// the same bytes on every run, machine and Go version (math/rand/v2's PCG
// is a specified algorithm). TestInputsStable pins their SHA-256.
func Inputs() []Input {
	return []Input{
		{"api-1KB", APIPayload()},
		{"numbers-100KB", NumberDocument()},
		{"array-1MB", RecordArray()},
		{"members-5000", WideObject()},
	}
}

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x1de_1ed9e7))
}

var (
	words = []string{
		"alpha", "delivery", "invoice", "refund", "widget", "north", "harbour",
		"green", "ledger", "quarterly", "express", "river", "café", "München",
		"Zoë", "naïve", "東京", "ストア", "Ωmega", "crème brûlée", "déjà vu",
		"señor", "Ærø", "Łódź", "İstanbul", "smile 😀", "rocket 🚀", "pay/out",
		`say "hi"`, `back\slash`, "tab\there", "line\nbreak",
	}
	currencies = []string{"EUR", "USD", "GBP", "JPY", "CHF", "SEK", "PLN"}
	locales    = []string{"de-DE", "en-US", "fr-FR", "ja-JP", "pl-PL", "tr-TR"}
	kinds      = []string{"payment.created", "payment.captured", "refund.issued", "order.shipped", "customer.updated"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// phrase joins n random words.
func phrase(r *rand.Rand, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = pick(r, words)
	}
	return strings.Join(parts, " ")
}

// text picks one of the two string spellings, so that about one string in
// four arrives \u-escaped and has to be decoded.
func text(r *rand.Rand, s string) lit {
	if r.IntN(4) == 0 {
		return strASCII(s)
	}
	return str(s)
}

func timestamp(r *rand.Rand) lit {
	return str(fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02d.%03dZ",
		1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000)))
}

func ident(r *rand.Rand, prefix string) lit {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := []byte(prefix)
	for range 14 {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	return str(string(b))
}

// money spells an amount in a currency's major unit, as clients send it:
// "12.5", "12.50", "1250E-2"... all the same binary64 value.
func money(r *rand.Rand) lit {
	cents := r.Int64N(10_000_000)
	f := float64(cents) / 100
	return spell(r, f)
}

// spell writes f in one of several decimal spellings that all parse to
// exactly f (strconv's shortest digits, possibly padded or moved into an
// exponent), so a canonicalizer has to parse and print every number rather
// than copy it through.
func spell(r *rand.Rand, f float64) lit {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	switch r.IntN(6) {
	case 0: // shortest, Go style: 1e+21, 1.5e-07
	case 1: // exponent form, upper-case E
		s = strings.ToUpper(strconv.FormatFloat(f, 'e', -1, 64))
	case 2: // trailing zeros after the point
		if math.Abs(f) < 1e15 && math.Abs(f) >= 1e-4 {
			s = strconv.FormatFloat(f, 'f', -1, 64)
			if !strings.Contains(s, ".") {
				s += "."
			}
			s += "00"
		}
	case 3: // mantissa times ten to a shifted exponent: 1250e-2
		if math.Abs(f) < 1e15 && math.Abs(f) >= 1e-4 {
			m := strings.Replace(strconv.FormatFloat(f, 'e', -1, 64), ".", "", 1)
			mant, exp, _ := strings.Cut(m, "e")
			e, _ := strconv.Atoi(exp)
			s = fmt.Sprintf("%se%d", mant, e-(len(strings.TrimPrefix(mant, "-"))-1))
		}
	default: // shortest, plain decimal where Go would print one
		if math.Abs(f) < 1e21 && math.Abs(f) >= 1e-6 {
			s = strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return lit(s)
}

// measurement returns a float over many magnitudes, including both sides of
// the places where ECMAScript switches to exponent notation (1e21, 1e-7),
// integers beyond 2^53, and the ends of binary64.
func measurement(r *rand.Rand) float64 {
	switch r.IntN(20) {
	case 0:
		return float64(r.Int64N(1 << 62)) // large integer, rounded to binary64
	case 1:
		return pick(r, []float64{5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e21, 1e-7, 9.999999999999999e20, 1e-6, 0})
	case 2, 3, 4:
		return float64(r.IntN(100_000) - 50_000) // plain integer
	}
	f := r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-18))
	if r.IntN(3) == 0 {
		// Decimal data with few digits, like sensor readings: 21.37.
		f = math.Round(f*1000) / 1000
	}
	if f == 0 {
		return 0 // never -0: the documents are meant to be valid for all
	}
	return f
}

// APIPayload returns about 1 KB: one order request as an HTTP API receives
// it, compact, members in the order a client builds them.
func APIPayload() []byte {
	r := newRand(1)
	items := array{}
	for i := range 4 {
		items = append(items, object{
			{str("sku"), ident(r, "sku_")},
			{str("name"), text(r, phrase(r, 2))},
			{str("quantity"), num(int64(1 + i + r.IntN(3)))},
			{str("unit_price"), money(r)},
			{str("tax_rate"), spell(r, 0.19)},
		})
	}
	doc := object{
		{str("id"), ident(r, "ord_")},
		{str("object"), str("order")},
		{str("amount"), num(r.Int64N(1_000_000))},
		{str("currency"), str(pick(r, currencies))},
		{str("customer"), object{
			{str("name"), text(r, "Zoë Ørsted-Müller")},
			{str("email"), str("zoe.orsted@example.com")},
			{str("locale"), str(pick(r, locales))},
			{str("address"), object{
				{str("line1"), text(r, "Hauptstraße 5")},
				{str("city"), text(r, "München")},
				{str("postal_code"), str("80331")},
				{str("country"), str("DE")},
			}},
		}},
		{str("items"), items},
		{str("shipping"), object{{str("method"), str("express")}, {str("cost"), money(r)}}},
		{str("capture"), lit("true")},
		{str("coupon"), lit("null")},
		{str("metadata"), object{
			{str("cart_id"), ident(r, "cart_")},
			{str("note"), text(r, "leave at the door / \"back\" entrance\n2nd floor")},
			{str("campaign"), text(r, phrase(r, 2))},
		}},
		{str("created_at"), timestamp(r)},
	}
	return render(doc, "")
}

// NumberDocument returns about 100 KB: a telemetry export, nested four
// levels deep and pretty-printed with two spaces, in which most of the
// bytes are numbers in varied spellings.
func NumberDocument() []byte {
	r := newRand(2)
	series := array{}
	for s := range 10 {
		readings := array{}
		for i := range 40 {
			readings = append(readings, object{
				{str("t"), num(1_780_000_000_000 + int64(s*100_000+i*250))},
				{str("value"), spell(r, measurement(r))},
				{str("error"), spell(r, measurement(r))},
				{str("quantiles"), array{spell(r, measurement(r)), spell(r, measurement(r)), spell(r, measurement(r))}},
			})
		}
		matrix := array{}
		for range 3 {
			matrix = append(matrix, array{spell(r, measurement(r)), spell(r, measurement(r)), spell(r, measurement(r))})
		}
		series = append(series, object{
			{str("sensor"), ident(r, "sen_")},
			{str("unit"), str(pick(r, []string{"°C", "Pa", "m/s²", "µmol/L"}))},
			{str("calibration"), object{
				{str("offset"), spell(r, measurement(r))},
				{str("scale"), spell(r, measurement(r))},
				{str("matrix"), matrix},
			}},
			{str("readings"), readings},
		})
	}
	doc := object{
		{str("dataset"), str("plant-7 telemetry")},
		{str("version"), num(3)},
		{str("generated_at"), timestamp(r)},
		{str("series"), series},
	}
	return render(doc, "  ")
}

// RecordArray returns about 1 MB: an array of 3,800 event objects, one per
// line as a JSON export writes them.
func RecordArray() []byte {
	r := newRand(3)
	records := array{}
	for i := range 3800 {
		var note node = lit("null")
		if r.IntN(3) == 0 {
			note = text(r, phrase(r, 3))
		}
		records = append(records, object{
			{str("id"), num(int64(100_000 + i))},
			{str("type"), str(pick(r, kinds))},
			{str("created"), timestamp(r)},
			{str("livemode"), lit(pick(r, []string{"true", "false"}))},
			{str("amount"), money(r)},
			{str("currency"), str(pick(r, currencies))},
			{str("customer"), object{
				{str("id"), ident(r, "cus_")},
				{str("name"), text(r, phrase(r, 2))},
				{str("locale"), str(pick(r, locales))},
			}},
			{str("tags"), array{text(r, pick(r, words)), text(r, pick(r, words))}},
			{str("note"), note},
		})
	}
	// One record per line, no other whitespace.
	var b []byte
	b = append(b, '[')
	for i, rec := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = append(b, render(rec, "")...)
	}
	return append(b, "\n]"...)
}

// WideObject returns one object with 5,000 members in random order: a
// sorting stress. About one name in eight holds characters above U+007F,
// among them private-use characters (U+E000...) and emoji (U+1F600...),
// which sort differently by UTF-16 code units (RFC 8785 section 3.2.3) than
// by code points or UTF-8 bytes.
func WideObject() []byte {
	r := newRand(4)
	const lower = "abcdefghijklmnopqrstuvwxyz0123456789_"
	special := []rune{'é', 'ß', 'Ω', '中', '\u00a0', '\ue000', '\uf8ff', '\uff5e', '😀', '🚀', '\U00010000'}
	seen := make(map[string]bool)
	doc := object{}
	for len(doc) < 5000 {
		var b strings.Builder
		for range 6 + r.IntN(10) {
			if r.IntN(64) == 0 {
				b.WriteRune(pick(r, special))
			} else {
				b.WriteByte(lower[r.IntN(len(lower))])
			}
		}
		name := b.String()
		if seen[name] {
			continue
		}
		seen[name] = true
		var v node
		switch r.IntN(3) {
		case 0:
			v = num(r.Int64N(1_000_000))
		case 1:
			v = spell(r, measurement(r))
		default:
			v = text(r, pick(r, words))
		}
		doc = append(doc, member{text(r, name), v})
	}
	return render(doc, "")
}
