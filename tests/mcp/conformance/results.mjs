// node results.mjs NODE_MODULES RESULTS_DIR BASELINE
//
// Reads what `conformance server -o RESULTS_DIR` saved (one
// server-<scenario>-<timestamp>/checks.json per scenario) and the
// expected-failures baseline, and prints one tab-separated line per
// scenario for tests/mcp/integration.sh to turn into TAP:
//   pass     SCENARIO  -       how many checks passed
//   fail     SCENARIO  -       the failed checks (not in the baseline: a regression)
//   xfail    SCENARIO  REASON  the failed checks (in the baseline, as expected)
//   stale    SCENARIO  REASON  -  (in the baseline but passes now)
//   unrun    SCENARIO  REASON  -  (in the baseline, but the suite has no such scenario)
//   noreason SCENARIO  -       -  (a baseline entry without its "# why" comment)
// A scenario fails as the suite's own baseline check decides it: any check
// FAILURE or WARNING. One with no successful check at all fails too, so a
// scenario that silently checked nothing does not count as a pass.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

// The suite's node_modules live in the test bed cache, not beside this file.
const [modules, dir, baselineFile] = process.argv.slice(2);
if (!baselineFile) {
    console.error('usage: results.mjs NODE_MODULES RESULTS_DIR BASELINE');
    process.exit(2);
}
const { parse } = createRequire(path.join(path.resolve(modules), '..', 'package.json'))('yaml');

// The suite reads the baseline with the same yaml package; the reasons are
// the entries' trailing comments, which a YAML parse drops, so read them
// from the lines; an entry the parse finds without one is reported.
const text = fs.readFileSync(baselineFile, 'utf8');
const listed = (parse(text)?.server ?? []).map(String);
const reasons = new Map();
for (const line of text.split('\n')) {
    const m = /^\s*-\s*([\w./-]+)\s*(?:#\s*(.*\S))?\s*$/.exec(line);
    if (m)
        reasons.set(m[1], m[2] ?? '');
}
for (const name of listed)
    if (!reasons.has(name))
        reasons.set(name, '');

const out = [];
const seen = new Set();
for (const entry of fs.readdirSync(dir).sort()) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
    if (!m)
        continue;
    const scenario = m[1];
    seen.add(scenario);
    let checks;
    try {
        checks = JSON.parse(fs.readFileSync(path.join(dir, entry, 'checks.json'), 'utf8'));
    } catch (e) {
        checks = [{ name: 'checks.json', status: 'FAILURE', errorMessage: e.message }];
    }
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    const good = checks.filter((c) => c.status === 'SUCCESS').length;
    const failed = bad.length > 0 || good === 0;
    const detail = bad.length > 0
        ? bad.map((c) => `${c.status} ${c.name}: ${(c.errorMessage ?? c.description ?? '').replace(/\s+/g, ' ')}`).join(' | ')
        : (good === 0 ? 'no check passed' : `${good} checks passed`);
    const expected = listed.includes(scenario);
    const kind = failed ? (expected ? 'xfail' : 'fail') : (expected ? 'stale' : 'pass');
    out.push([kind, scenario, expected ? reasons.get(scenario) || '-' : '-', detail]);
}
for (const name of listed)
    if (!seen.has(name))
        out.push(['unrun', name, reasons.get(name) || '-', '-']);
for (const [name, reason] of reasons)
    if (!reason)
        out.push(['noreason', name, '-', '-']);
for (const row of out)
    console.log(row.join('\t'));
