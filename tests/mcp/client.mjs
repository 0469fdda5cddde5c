// SPDX-License-Identifier: LGPL-2.1-or-later
// The official MCP client (@modelcontextprotocol/sdk from npm, pinned in
// package-lock.json) against `sandboxctl mcp`, for tests/mcp/integration.sh.
//
//   node client.mjs TRANSPORT ACTION [ARGS...]
//   TRANSPORT: stdio:CMD[,ARG...]    StdioClientTransport running CMD (comma-separated argv)
//              http:URL[@TOKENFILE]  StreamableHTTPClientTransport, with the bearer token in TOKENFILE
//              unix:PATH             StreamableHTTPClientTransport over the UNIX socket PATH
//   ACTION:    tools                 list the tools, compile each schema with Ajv (strict),
//                                    print "tools NAME,NAME..." and "schemas-ok N"
//              call TOOL JSON        call TOOL, print the result as one JSON line
//              version               print the negotiated revision
//              grow JSON             list the tools, create_worker with JSON, list again: print
//                                    "before N", "worker ID", "changed yes|no" (a list_changed
//                                    notification came), "after NAME,NAME..."
// Any failure of the protocol (a refused connection, an HTTP error, a
// JSON-RPC error) is "error: MESSAGE" on stderr and exit status 1; a tool
// error is a result (isError: true), exit status 0.

import http from "node:http";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import Ajv from "ajv";

// fetch over a UNIX socket: Node's own fetch dials TCP only.
function unixFetch(socketPath) {
    return (url, init = {}) => new Promise((resolve, reject) => {
        const u = new URL(url);
        const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
        // As fetch does for a string body (http.request would send it chunked).
        if (init.body) headers["content-length"] = Buffer.byteLength(init.body);
        const req = http.request({ socketPath, path: u.pathname + u.search, method: init.method ?? "GET", headers }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => {
                const body = Buffer.concat(chunks);
                const h = new Headers();
                for (const [k, v] of Object.entries(res.headers)) h.set(k, Array.isArray(v) ? v.join(", ") : v);
                resolve(new Response(body.length ? body : null, { status: res.statusCode, headers: h }));
            });
            res.on("error", reject);
        });
        req.on("error", reject);
        if (init.signal) init.signal.addEventListener("abort", () => req.destroy(new Error("aborted")));
        if (init.body) req.write(init.body);
        req.end();
    });
}

function transportOf(spec) {
    if (spec.startsWith("stdio:")) {
        const [command, ...args] = spec.slice(6).split(",");
        return new StdioClientTransport({ command, args, stderr: "inherit" });
    }
    if (spec.startsWith("http:")) {
        const [url, tokenFile] = spec.slice(5).split("@");
        const requestInit = {};
        if (tokenFile !== undefined) {
            const token = tokenFile === "" ? "" : readFileSync(tokenFile, "utf8").trim();
            requestInit.headers = { Authorization: `Bearer ${token}` };
        }
        return new StreamableHTTPClientTransport(new URL(url), { requestInit });
    }
    if (spec.startsWith("unix:"))
        return new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), { fetch: unixFetch(spec.slice(5)) });
    throw new Error(`unknown transport ${spec}`);
}

async function main() {
    const [spec, action, ...rest] = process.argv.slice(2);
    const transport = transportOf(spec);
    // The SDK tells the transport the revision initialize settled on (the
    // HTTP transport sends it as MCP-Protocol-Version); note it either way.
    let negotiated;
    const setVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (v) => { negotiated = v; setVersion?.(v); };
    const client = new Client({ name: "sandboxd-tests", version: "1" });
    await client.connect(transport);
    try {
        if (action === "version") {
            console.log(`version ${negotiated}`);
            console.log(`server ${client.getServerVersion()?.name}`);
        } else if (action === "tools") {
            const { tools } = await client.listTools();
            const ajv = new Ajv({ strict: true, allowUnionTypes: true });
            let ok = 0;
            for (const t of tools) {
                if (!t.description || t.description.length < 40) throw new Error(`${t.name}: no real description`);
                const validate = ajv.compile(t.inputSchema);
                // Each schema refuses what the tool does not take.
                if (validate({ no_such_argument: 1 })) throw new Error(`${t.name}: schema takes unknown arguments`);
                ok++;
            }
            console.log(`tools ${tools.map((t) => t.name).sort().join(",")}`);
            console.log(`schemas-ok ${ok}`);
        } else if (action === "grow") {
            let changed = false;
            client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed = true; });
            console.log(`before ${(await client.listTools()).tools.length}`);
            const r = await client.callTool({ name: "create_worker", arguments: JSON.parse(rest[0] ?? "{}") },
                                            undefined, { timeout: 300000 });
            console.log(`worker ${r.structuredContent?.worker_id}`);
            await new Promise((res) => setTimeout(res, 500));
            console.log(`changed ${changed ? "yes" : "no"}`);
            console.log(`after ${(await client.listTools()).tools.map((t) => t.name).sort().join(",")}`);
        } else if (action === "call") {
            const [name, json] = rest;
            const result = await client.callTool({ name, arguments: JSON.parse(json ?? "{}") }, undefined,
                                                 { timeout: 300000 });
            console.log(JSON.stringify(result));
        } else
            throw new Error(`unknown action ${action}`);
    } finally {
        await client.close();
    }
}

main().then(() => process.exit(0), (e) => {
    console.error(`error: ${e?.message ?? e}`);
    process.exit(1);
});
