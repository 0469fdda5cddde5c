// node auth-proxy.mjs LISTEN_PORT UPSTREAM_PORT TOKEN_FILE
//
// The conformance suite (@modelcontextprotocol/conformance) dials a URL and
// has no way to add a header, while `sandboxctl mcp --listen 127.0.0.1:PORT`
// answers nothing without a bearer token. This forwards every request on
// 127.0.0.1:LISTEN_PORT to 127.0.0.1:UPSTREAM_PORT with `Authorization:
// Bearer <token>` added and nothing else changed (Origin and Host pass
// through, so the server's DNS-rebinding check sees what the suite sent),
// streaming both ways so that SSE responses and GET streams arrive as the
// server writes them. It prints "listening" once it accepts connections.
import fs from 'node:fs';
import http from 'node:http';

const [listenPort, upstreamPort, tokenFile] = process.argv.slice(2);
if (!tokenFile) {
    console.error('usage: auth-proxy.mjs LISTEN_PORT UPSTREAM_PORT TOKEN_FILE');
    process.exit(2);
}
const token = fs.readFileSync(tokenFile, 'utf8').trim();

const server = http.createServer((req, res) => {
    const up = http.request({
        host: '127.0.0.1',
        port: Number(upstreamPort),
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
    }, (upRes) => {
        res.writeHead(upRes.statusCode, upRes.statusMessage, upRes.headers);
        res.flushHeaders();
        upRes.pipe(res);
    });
    // A client that hangs up (the suite closing a GET stream) ends the
    // upstream request too, so the server sees the stream close.
    res.on('close', () => up.destroy());
    up.on('error', (e) => {
        if (!res.headersSent)
            res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`auth-proxy: ${e.message}\n`);
    });
    req.pipe(up);
});
server.listen(Number(listenPort), '127.0.0.1', () => console.log('listening'));
