/**
 * Writes the synthesized production and sandbox templates (placeholder
 * assets, no bundling) to a folder, for cfn-lint and checkov in scripts/test:
 *
 *   node dist/test/synth-templates.js <folder>
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

import { synth } from './helpers';

const out = process.argv[2];
if (!out) {
  console.error('usage: synth-templates.js <folder>');
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });
for (const mode of ['production', 'sandbox'] as const) {
  const file = path.join(out, `nurse-call-${mode}.template.json`);
  fs.writeFileSync(file, JSON.stringify(synth(mode, { alarmEmail: 'ops@example.org' }).toJSON(), null, 1));
  console.log(file);
}
