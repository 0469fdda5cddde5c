// The gate benchmark's client and handler (bench.sh): Node's http with
// keep-alive agents, so the client costs the same direct and through the gate.
//   node load.js serve PORT                      a handler answering 64 bytes
//   node load.js run TARGET TOKEN N CONC SECONDS  TARGET: host:port or a socket path
'use strict';
const http = require('http');

if (process.argv[2] === 'serve') {
  const body = Buffer.alloc(64, 'x');
  http.createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(200, { 'Content-Length': body.length }); res.end(body); });
  }).listen(+process.argv[3], '127.0.0.1');
  return;
}

const [target, token, n, conc, seconds] = process.argv.slice(3);
const where = target.startsWith('/') ? { socketPath: target } : { host: target.split(':')[0], port: +target.split(':')[1] };
const headers = token === '-' ? {} : { Authorization: 'Bearer ' + token };

function get(agent) {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    http.get({ ...where, path: '/', headers, agent }, res => {
      res.resume();
      res.on('end', () => res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - t) / 1000)
                                                : reject(new Error('status ' + res.statusCode)));
    }).on('error', reject);
  });
}

(async () => {
  const one = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 200; i++) await get(one);          // warm-up
  const lat = [];
  for (let i = 0; i < +n; i++) lat.push(await get(one));
  lat.sort((a, b) => a - b);
  const pct = p => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))];
  const many = new http.Agent({ keepAlive: true, maxSockets: +conc });
  let done = 0;
  const end = Date.now() + 1000 * +seconds;
  await Promise.all(Array.from({ length: +conc }, async () => {
    while (Date.now() < end) { await get(many); done++; }
  }));
  console.log(JSON.stringify({ p50_us: pct(0.5), p99_us: pct(0.99), requests: lat.length,
                               requests_per_s: done / +seconds, concurrency: +conc }));
  one.destroy(); many.destroy();
})().catch(e => { console.error(e.message); process.exit(1); });
