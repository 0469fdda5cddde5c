#!/usr/bin/env python3
"""A static HTTPS upstream for the client matrix: serves ROOT as it is, a
directory by its index.html (text/html: a pip simple index) or index.json
(application/json: an npm registry document), anything else 404.
Usage: www-upstream.py ADDRESS PORT CERT KEY ROOT"""
import http.server
import os
import socket
import socketserver
import ssl
import sys
import urllib.parse

TYPES = {".html": "text/html", ".json": "application/json", ".txt": "text/plain"}


class Handler(http.server.BaseHTTPRequestHandler):
    root = "."

    def resolve(self):
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        full = os.path.realpath(os.path.join(self.root, path.lstrip("/")))
        if not (full == self.root or full.startswith(self.root + os.sep)):
            return None
        if os.path.isdir(full):
            for index in ("index.html", "index.json"):
                if os.path.isfile(os.path.join(full, index)):
                    return os.path.join(full, index)
            return None
        return full if os.path.isfile(full) else None

    def answer(self, body):
        path = self.resolve()
        if path is None:
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Type", TYPES.get(os.path.splitext(path)[1], "application/octet-stream"))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self):
        self.answer(True)

    def do_HEAD(self):
        self.answer(False)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    address, port, cert, key, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    Handler.root = os.path.realpath(root)
    if ":" in address:
        Server.address_family = socket.AF_INET6
    server = Server((address, port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.serve_forever()


if __name__ == "__main__":
    main()
