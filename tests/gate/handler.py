#!/usr/bin/env python3
"""A test handler for the gate: what it was sent is what the checks read.

  handler.py PORT SEEN_FILE
Every request it gets appends "METHOD PATH" to SEEN_FILE, so a check can
prove the handler saw nothing. Routes: /hello, /echo (body and headers
back), /big?n=BYTES (a response of n bytes), /chunked?n=BYTES, /slow?s=SECONDS.
"""
import http.server
import socketserver
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _seen(self):
        with open(SEEN, "a") as f:
            f.write(f"{self.command} {self.path}\n")

    def _send(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self):
        self._seen()
        url = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(url.query)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if url.path == "/hello":
            return self._send(200, b"hello\n")
        if url.path == "/echo":
            heads = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
            return self._send(200, heads.encode() + b"\n" + body)
        if url.path == "/big":
            return self._send(200, b"x" * int(q["n"][0]))
        if url.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            left = int(q["n"][0])
            while left > 0:
                k = min(left, 65536)
                self.wfile.write(b"%x\r\n" % k + b"y" * k + b"\r\n")
                left -= k
            self.wfile.write(b"0\r\n\r\n")
            return
        if url.path == "/probe":
            return self._send(200, probe().encode())
        if url.path == "/slow":
            time.sleep(float(q["s"][0]))
            return self._send(200, b"slow\n")
        return self._send(404, b"no such route\n")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _route


def probe():
    """What a handler can find of its gate: every environment, command line
    and credential it can read, the endpoints' directory, and whether it can
    run a binary it drops into its home."""
    import glob, os, shutil, socket, subprocess
    out = []
    for f in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
        try:
            out.append(f + " " + open(f, "rb").read().replace(b"\0", b" ").decode("latin-1"))
        except OSError as e:
            out.append(f"{f} {e.__class__.__name__}")
    d = os.environ.get("CREDENTIALS_DIRECTORY")
    for f in glob.glob((d or "/run/credentials") + "/**", recursive=True):
        try:
            out.append("cred " + f + " " + open(f, "rb").read().decode("latin-1"))
        except OSError as e:
            out.append(f"cred {f} {e.__class__.__name__}")
    try:
        out.append("endpoints " + " ".join(os.listdir("/run/sandboxd-endpoints")))
    except OSError as e:
        out.append(f"endpoints {e.__class__.__name__}")
    for path in glob.glob("/run/sandboxd-endpoints/*.sock") or ["/run/sandboxd-endpoints/x.sock"]:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            out.append(f"connect {path} connected")
        except OSError as e:
            out.append(f"connect {path} {e.__class__.__name__}")
    home = os.environ.get("HOME", "/tmp")
    for where in (home, "/tmp"):
        try:
            shutil.copy("/bin/true", where + "/dropped")
            os.chmod(where + "/dropped", 0o755)
            subprocess.run([where + "/dropped"], check=True)
            out.append(f"exec {where} ran")
        except (OSError, subprocess.CalledProcessError) as e:
            out.append(f"exec {where} {e.__class__.__name__}")
    return "\n".join(out) + "\n"


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass    # the gate cutting an oversize answer short is what is tested


if __name__ == "__main__":
    SEEN = sys.argv[2]
    Server((sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
