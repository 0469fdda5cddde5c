#!/usr/bin/env python3
"""A TLS upstream for the egress tests: GET /N answers N bytes of 'x'.
Usage: egress-upstream.py ADDRESS PORT CERT KEY"""
import http.server
import socket
import socketserver
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        n = int(self.path.strip("/") or 5)
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        chunk = b"x" * 65536
        while n > 0:
            k = min(n, len(chunk))
            self.wfile.write(chunk[:k])
            n -= k

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    address, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    if ":" in address:
        Server.address_family = socket.AF_INET6
    server = Server((address, port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    # The handshake happens in each connection's thread (on its first read),
    # not in accept: a client that connects and says nothing (a held tunnel)
    # must not stall every other client of this upstream.
    server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.serve_forever()


if __name__ == "__main__":
    main()
