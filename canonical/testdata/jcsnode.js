// jcsnode.js reads JSON texts from standard input, one per line, and writes
// the RFC 8785 canonical form of each, one per line, as V8 computes it:
// JSON.parse, then JSON.stringify of every string and number, with object
// members sorted by the UTF-16 code units of their names (the default order
// of Array.prototype.sort on strings), as RFC 8785 section 3.2.3 requires.
// JSON.stringify writes every Unicode scalar value other than '"', '\\' and
// the controls as itself, noncharacters included.
//
// TestNoncharacterNode feeds it the inputs of noncharacterTests and checks
// the expected strings recorded in that table, which were produced by this
// script (node v20.20.2), not by package canonical.
//
// Usage: node jcsnode.js < lines
'use strict';

function canonical(v) {
  if (v === null || typeof v !== 'object') {
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) {
    return '[' + v.map(canonical).join(',') + ']';
  }
  const names = Object.keys(v).sort();
  return '{' + names.map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
}

const text = require('fs').readFileSync(0, 'utf8');
const lines = text.split('\n');
if (lines[lines.length - 1] === '') {
  lines.pop();
}
process.stdout.write(lines.map((line) => canonical(JSON.parse(line))).join('\n') + '\n');
