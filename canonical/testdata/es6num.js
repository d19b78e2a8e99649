// es6num.js prints binary64 values with V8's String(x), which is
// ECMAScript's Number::toString (ECMA-262 section 6.1.6.1.20), the number
// form RFC 8785 requires. TestFormatFloatNode runs it and compares every
// line with FormatFloat.
//
// Usage: node es6num.js COUNT SEED
// Output: COUNT lines "hex,string", hex being the 16-digit bit pattern.
//
// The bit patterns come from a seeded xorshift64* generator so that a
// failure can be reproduced. A quarter are uniformly random bits (mostly
// huge or tiny exponents), a quarter have exponents near 1 (plain
// notation and the 1e-7 / 1e21 switch-over), a quarter are integers up to
// 2^64 and a quarter are short decimals like 12.34. NaN and infinities are
// redrawn: they have no JSON form.
'use strict';

const count = Number(process.argv[2] || 100000);
let state = BigInt.asUintN(64, BigInt(process.argv[3] || 1) * 0x9E3779B97F4A7C15n) || 1n;
const M64 = (1n << 64n) - 1n;

function next() {
  state ^= state >> 12n;
  state ^= (state << 25n) & M64;
  state ^= state >> 27n;
  return (state * 0x2545F4914F6CDD1Dn) & M64;
}

const view = new DataView(new ArrayBuffer(8));

function fromBits(b) {
  view.setBigUint64(0, b);
  return view.getFloat64(0);
}

function bitsOf(x) {
  view.setFloat64(0, x);
  return view.getBigUint64(0);
}

const lines = [];
for (let i = 0; i < count; ) {
  const r = next();
  let x;
  switch (i % 4) {
    case 0:
      x = fromBits(r);
      break;
    case 1: { // sign, exponent within 2^±80, random mantissa
      const exp = 1023n - 80n + (r >> 20n) % 161n;
      x = fromBits((r & (1n << 63n)) | (exp << 52n) | (next() & ((1n << 52n) - 1n)));
      break;
    }
    case 2:
      x = Number(r >> (r & 63n));
      break;
    default: { // up to 6 integer and 6 fraction digits
      const digits = Number(r % 1000000000000n);
      x = digits / 10 ** Number((r >> 40n) % 13n);
      break;
    }
  }
  if (!Number.isFinite(x)) {
    continue;
  }
  lines.push(bitsOf(x).toString(16).padStart(16, '0') + ',' + String(x));
  i++;
}
process.stdout.write(lines.join('\n') + '\n');
