#!/usr/bin/env python3
"""The workload of loss-checkpoint.sh and bench/checkpoint-handshakes.sh: a
gVisor worker that keeps TCP handshakes in flight, so that a checkpoint
finds some (runsc 0.0~20240729 cannot save an endpoint in SYN-SENT or
SYN-RECV). Outbound: OUT threads open a connection to the egress proxy's
listener (https_proxy, across the veth) and close it, over and over.
Inbound: a listener on the sandbox's own address (own_address()) and LO
threads connecting to it, so half-open connections wait in its accept queue. Every 0.2 s one line
goes to $HOME/log: "COUNTER out=OK/FAILED lo=OK/FAILED" (totals since
start; the counter lives in memory, so a restore counts on, a restart starts
over). Connections reset by a checkpoint are counted as failed and retried.
Usage: loss-checkpoint-work.py [OUT [LO]]"""
import os
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

n_out = int(sys.argv[1]) if len(sys.argv) > 1 else 4
n_lo = int(sys.argv[2]) if len(sys.argv) > 2 else 2
proxy = urlsplit(os.environ.get("https_proxy") or os.environ["HTTPS_PROXY"])
target = (proxy.hostname, proxy.port or 3128)
count = {"out_ok": 0, "out_fail": 0, "lo_ok": 0, "lo_fail": 0}
lock = threading.Lock()


def bump(key):
    with lock:
        count[key] += 1


def dial(addr, key):
    while True:
        try:
            with socket.create_connection(addr, timeout=5):
                pass
            bump(key + "_ok")
        except OSError:
            bump(key + "_fail")
            time.sleep(0.05)
        time.sleep(0.002)


def serve(ls):
    while True:
        try:
            c, _ = ls.accept()
            c.close()
        except OSError:
            time.sleep(0.05)


def own_address():
    """The sandbox's loopback, or where there is none (gVisor on the veth
    mirrors the links of its network namespace, whose lo is down) its own
    address on the link: connections to it stay inside its network stack."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
        return "127.0.0.1"
    except OSError:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(target)
            return s.getsockname()[0]


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((own_address(), 0))
ls.listen(64)
threads = [threading.Thread(target=serve, args=(ls,), daemon=True)]
threads += [threading.Thread(target=dial, args=(target, "out"), daemon=True) for _ in range(n_out)]
threads += [threading.Thread(target=dial, args=(ls.getsockname(), "lo"), daemon=True) for _ in range(n_lo)]
for t in threads:
    t.start()
log = open(os.path.join(os.environ["HOME"], "log"), "a", buffering=1)
i = 0
while True:
    i += 1
    with lock:
        c = dict(count)
    log.write("%d out=%d/%d lo=%d/%d\n" % (i, c["out_ok"], c["out_fail"], c["lo_ok"], c["lo_fail"]))
    time.sleep(0.2)
