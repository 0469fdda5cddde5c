// Node's fetch (undici), which ignores proxy variables, against a broker
// listener; it sends its own Authorization, which the broker must replace.
// Usage: node node-fetch.js URL
fetch(process.argv[2], { headers: { Authorization: "Bearer worker-forged" } })
    .then(async (r) => console.log(await r.text()))
    .catch((e) => { console.error(String(e)); process.exit(1); });
