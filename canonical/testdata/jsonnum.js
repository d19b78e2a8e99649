// jsonnum.js reads JSON texts from standard input, one per line, and writes
// JSON.stringify(JSON.parse(line)) for each, one per line. V8's JSON.parse
// rounds a number of any length to the nearest binary64, ties to even, and
// JSON.stringify prints it with Number::toString (ECMA-262 section
// 6.1.6.1.20), the form RFC 8785 section 3.2.2.3 requires; a number beyond
// binary64 parses as Infinity and prints as null.
//
// TestLongNumbersNode feeds it the inputs of longNumberTests and checks the
// expected strings recorded in that table, which were produced by this
// script (node v20.20.2), not by package canonical.
//
// Usage: node jsonnum.js < lines
'use strict';

const text = require('fs').readFileSync(0, 'utf8');
const lines = text.split('\n');
if (lines[lines.length - 1] === '') {
  lines.pop();
}
const out = lines.map((line) => JSON.stringify(JSON.parse(line)));
process.stdout.write(out.join('\n') + '\n');
