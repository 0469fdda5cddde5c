// Node's https through the worker's proxy with an explicit agent: Node does
// not read HTTPS_PROXY itself, so the agent opens the CONNECT tunnel and
// runs TLS over it, as proxy agents in the npm ecosystem do.
// Usage: node node-proxy-get.js URL CAFILE   (proxy from $HTTPS_PROXY)
"use strict";
const fs = require("fs");
const http = require("http");
const https = require("https");
const tls = require("tls");

const [url, cafile] = process.argv.slice(2);
const proxy = new URL(process.env.HTTPS_PROXY);
const target = new URL(url);
const ca = fs.readFileSync(cafile);

class TunnelAgent extends https.Agent {
    createConnection(options, callback) {
        const req = http.request({
            host: proxy.hostname, port: proxy.port, method: "CONNECT",
            path: `${options.host}:${options.port}`, headers: { Host: `${options.host}:${options.port}` },
        });
        req.on("connect", (res, socket) => {
            if (res.statusCode !== 200) {
                socket.destroy();
                callback(new Error(`proxy answered ${res.statusCode} ${res.headers["x-sandbox-egress-reason"] || ""}`));
                return;
            }
            callback(null, tls.connect({ socket, servername: options.host, ca }));
        });
        req.on("error", callback);
        req.end();
    }
}

https.get(url, { agent: new TunnelAgent(), ca, host: target.hostname }, (res) => {
    let body = "";
    res.on("data", (d) => (body += d));
    res.on("end", () => { process.stdout.write(body); process.exit(res.statusCode === 200 ? 0 : 1); });
}).on("error", (e) => { console.error(`node: ${e.message}`); process.exit(1); });
