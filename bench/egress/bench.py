#!/usr/bin/env python3
"""Load generator and upstream for bench.sh. Every connection, direct or
through a proxy, sends a real TLS ClientHello (the proxy requires one) and
then the upstream answers: port BULK streams --bytes bytes then closes,
port PING answers one byte then closes.

  bench.py server ADDRESS BULK_PORT PING_PORT BYTES
  bench.py throughput VIA TARGET BYTES REPEAT    -> bytes/s (median)
  bench.py latency VIA TARGET COUNT              -> p50_us p99_us
  bench.py rate VIA TARGET SECONDS PROCS         -> tunnels/s
  bench.py hello FILE                            writes the ClientHello (for egress-load)
VIA is "direct" or a proxy "HOST:PORT"; TARGET is "NAME:PORT" (connected
directly by resolving NAME)."""
import multiprocessing
import os
import socket
import ssl
import statistics
import sys
import threading
import time

SNI = "bench.egress.test"


def client_hello(sni):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


HELLO = client_hello(SNI)


def recv_exact_hello(conn):
    need, got = len(HELLO), 0
    while got < need:
        chunk = conn.recv(need - got)
        if not chunk:
            return False
        got += len(chunk)
    return True


def serve(address, port, handler):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen(1024)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=handler, args=(conn,), daemon=True).start()


def server(address, bulk_port, ping_port, nbytes):
    path = "/dev/shm/egress-bench-payload"
    with open(path, "wb") as f:
        f.write(b"\0" * nbytes)

    def bulk(conn):
        with conn:
            if recv_exact_hello(conn):
                with open(path, "rb") as f:
                    conn.sendfile(f)

    def ping(conn):
        with conn:
            if recv_exact_hello(conn):
                conn.sendall(b"!")

    threading.Thread(target=serve, args=(address, bulk_port, bulk), daemon=True).start()
    serve(address, ping_port, ping)


def open_tunnel(via, target):
    """Returns a socket on which the upstream is ready for the ClientHello."""
    if via == "direct":
        host, port = target.rsplit(":", 1)
        s = socket.create_connection((socket.gethostbyname(host), int(port)))
    else:
        host, port = via.rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                raise OSError("proxy closed")
            data += chunk
        if not data.startswith(b"HTTP/1.1 200") and not data.startswith(b"HTTP/1.0 200"):
            raise OSError("proxy refused: " + data.split(b"\r\n")[0].decode())
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def throughput(via, target, nbytes, repeat):
    buf = bytearray(1 << 20)
    rates = []
    for _ in range(repeat):
        s = open_tunnel(via, target)
        t0 = time.perf_counter()
        s.sendall(HELLO)
        got = 0
        while True:
            n = s.recv_into(buf)
            if n == 0:
                break
            got += n
        dt = time.perf_counter() - t0
        s.close()
        if got != nbytes:
            raise OSError(f"short transfer {got}")
        rates.append(got / dt)
    print(int(statistics.median(rates)))


def one_ping(via, target):
    t0 = time.perf_counter()
    s = open_tunnel(via, target)
    s.sendall(HELLO)
    if s.recv(1) != b"!":
        raise OSError("no answer")
    dt = time.perf_counter() - t0
    s.close()
    return dt


def latency(via, target, count):
    for _ in range(20):
        one_ping(via, target)   # warm caches and the proxy
    samples = sorted(one_ping(via, target) for _ in range(count))
    p50 = samples[len(samples) // 2]
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    print(int(p50 * 1e6), int(p99 * 1e6))


def rate_worker(args):
    via, target, seconds = args
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        one_ping(via, target)
        n += 1
    return n


def rate(via, target, seconds, procs):
    with multiprocessing.Pool(procs) as pool:
        t0 = time.perf_counter()
        total = sum(pool.map(rate_worker, [(via, target, seconds)] * procs))
        dt = time.perf_counter() - t0
    print(int(total / dt))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "server":
        server(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif cmd == "throughput":
        throughput(args[0], args[1], int(args[2]), int(args[3]))
    elif cmd == "latency":
        latency(args[0], args[1], int(args[2]))
    elif cmd == "rate":
        rate(args[0], args[1], float(args[2]), int(args[3]))
    elif cmd == "hello":
        with open(args[0], "wb") as f:
            f.write(HELLO)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
