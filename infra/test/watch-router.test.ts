/**
 * `cargo lambda watch` routes like API Gateway: the router in the
 * workspace's Cargo.toml (`[workspace.metadata.lambda.watch.router]`, used by
 * scripts/test-lambda-watch and the README's local run) must name the same
 * paths and functions as the routes the sandbox stack deploys (ROUTES), and
 * `[workspace.metadata.nurse-call.watch] default-function` the function of
 * its `$default` route.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { routesOf, synth } from './helpers';

const CARGO_TOML = path.resolve(__dirname, '..', '..', '..', 'Cargo.toml');
const ROUTER_TABLE = '[workspace.metadata.lambda.watch.router]';
const DEFAULT_TABLE = '[workspace.metadata.nurse-call.watch]';

/**
 * A table of Cargo.toml whose entries are strings: key → value. Only the
 * form this project writes (`"key" = "value"` or `key = "value"`, one a
 * line, comments) is read; any other line fails the test rather than being
 * skipped.
 */
function stringTable(text: string, header: string): Record<string, string> {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.trim() === header);
  assert.notEqual(start, -1, `no ${header} in Cargo.toml`);
  const table: Record<string, string> = {};
  for (const raw of lines.slice(start + 1)) {
    const line = raw.trim();
    if (line.startsWith('[')) {
      break;
    }
    if (line === '' || line.startsWith('#')) {
      continue;
    }
    const entry = /^(?:"([^"]+)"|([A-Za-z0-9_-]+))\s*=\s*"([^"]+)"$/.exec(line);
    assert.ok(entry, `a line of ${header} this test cannot read: ${line}`);
    const key = entry[1] ?? entry[2];
    assert.equal(table[key], undefined, `${key} is given twice in ${header}`);
    table[key] = entry[3];
  }
  return table;
}

describe('cargo lambda watch router', () => {
  it('has exactly the routes of the sandbox stack, each to the same function, $default included', () => {
    const cargoToml = fs.readFileSync(CARGO_TOML, 'utf8');
    const local: Record<string, string> = {};
    for (const [routePath, fn] of Object.entries(stringTable(cargoToml, ROUTER_TABLE))) {
      // Every method: API Gateway's `ANY`.
      local[`ANY ${routePath}`] = fn;
    }
    local.$default = stringTable(cargoToml, DEFAULT_TABLE)['default-function'];
    assert.deepEqual(local, routesOf(synth('sandbox')));
  });

  it('reads a table and nothing after it', () => {
    const text = [
      '[workspace]',
      '"/not" = "this"',
      ROUTER_TABLE,
      '# a comment',
      '"/a" = "one"',
      '',
      '"/b/c" = "two"',
      '[workspace.package]',
      '"/d" = "three"',
    ].join('\n');
    assert.deepEqual(stringTable(text, ROUTER_TABLE), { '/a': 'one', '/b/c': 'two' });
    assert.deepEqual(stringTable(`${DEFAULT_TABLE}\ndefault-function = "x"`, DEFAULT_TABLE), { 'default-function': 'x' });
    assert.throws(() => stringTable(`${ROUTER_TABLE}\n"/a" = { function = "one" }`, ROUTER_TABLE), /cannot read/);
    assert.throws(() => stringTable(`${ROUTER_TABLE}\n"/a" = "one"\n"/a" = "two"`, ROUTER_TABLE), /given twice/);
    assert.throws(() => stringTable('[workspace]', ROUTER_TABLE), /no \[workspace\.metadata/);
  });
});
