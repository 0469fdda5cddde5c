#!/usr/bin/env python3
"""A TLS upstream for the broker tests. Every request is one JSON line in LOG
(method, path, headers, body length, the proxy-side port of the connection),
with "resolved": the path as the most lenient server would route it (decoded
twice, '\\' taken for '/', cut at a decoded '?' or '#', ";..." path
parameters dropped, dot segments removed), so a test can prove that no
request reached a path outside the broker's prefix on any such server.
(under any base path)
  /big/N      N bytes with a Content-Length
  /chunked/N  N bytes, chunked
  /close/N    N bytes delimited by the close (HTTP/1.0 style)
  /git/...    with GIT_ROOT given: git's smart HTTP (git http-backend) over the
              repositories in GIT_ROOT, only for a request whose Authorization
              is the first line of AUTH_FILE (401 otherwise), as a forge does
  anything else: 200 "ok"
Usage: broker-upstream.py ADDRESS PORT CERT KEY LOG [GIT_ROOT AUTH_FILE]"""
import http.server
import json
import posixpath
import socketserver
import ssl
import subprocess
import sys
import threading
import urllib.parse

LOCK = threading.Lock()


def resolve(target):
    path = target.split("?", 1)[0]
    for _ in range(2):
        path = urllib.parse.unquote(path, errors="replace")
    path = path.replace("\\", "/").split("?", 1)[0].split("#", 1)[0]
    path = "/".join(seg.split(";", 1)[0] for seg in path.split("/"))
    return posixpath.normpath(path) if path else "/"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body are two writes: with Nagle, each response would wait for a delayed ACK.
    disable_nagle_algorithm = True

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with LOCK, open(self.server.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "resolved": resolve(self.path),
                                "headers": [[k, v] for k, v in self.headers.items()],
                                "body": len(body), "te": self.headers.get("Transfer-Encoding"),
                                "peer": self.client_address[1]}) + "\n")
        if self.server.git_root and self.path.startswith("/git/"):
            return self.git(body)
        parts = self.path.split("?")[0].split("/")
        kind, size = (parts[-2], int(parts[-1])) if len(parts) >= 3 and parts[-1].isdigit() else ("", 2)
        self.send_response(200)
        if kind == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            left = size
            while left:
                k = min(left, 10000)
                self.wfile.write(b"%x\r\n%s\r\n" % (k, b"c" * k))
                left -= k
            self.wfile.write(b"0\r\n\r\n")
        elif kind == "close":
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"z" * size)
            self.close_connection = True
        else:
            data = b"x" * size if kind == "big" else b"ok"
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

    def git(self, body):
        with open(self.server.git_auth) as f:
            want = f.readline().rstrip("\n")
        if self.headers.get("Authorization") != want:
            return self.answer("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"')], b"no\n")
        path, _, query = self.path[len("/git"):].partition("?")
        env = {"GIT_PROJECT_ROOT": self.server.git_root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": "broker",
               "CONTENT_TYPE": self.headers.get("Content-Type") or "", "CONTENT_LENGTH": str(len(body)),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding") or "",
               "GIT_PROTOCOL": self.headers.get("Git-Protocol") or "", "PATH": "/usr/bin:/bin"}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False).stdout
        head, _, data = out.partition(b"\r\n\r\n")
        status, headers = "200 OK", []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = value
            elif name:
                headers.append((name, value))
        self.answer(status, headers, data)

    def answer(self, status, headers, data):
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason or None)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    address, port, cert, key, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    server = Server((address, port), Handler)
    server.log = log
    server.git_root, server.git_auth = (sys.argv[6], sys.argv[7]) if len(sys.argv) > 7 else (None, None)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.serve_forever()


if __name__ == "__main__":
    main()
