# Run inside a worker by lib.sh's check_no_host_sockets (passed as
# python3 -c, since the worker sees nothing of the test's files):
#   host-sockets.py FORGED_ID NONCE ABSTRACT_NAME PATH...
# Connects to each PATH as a stream and a datagram socket and prints
# "PATH connected" or "PATH ERRNO-NAME"; whatever connects is sent an entry
# forging worker FORGED_ID's egress decision, marked with NONCE, so the test
# can look for it in the journal. Then the abstract socket ABSTRACT_NAME,
# every socket file the worker can find, /run, and /dev/shm after it put a
# file of its own there.
import errno
import os
import socket
import stat
import sys

forged_id, nonce, abstract = sys.argv[1:4]
entry = ("MESSAGE=sbx-forged-%s\nSANDBOXD_WORKER_ID=%s\nEGRESS_DECISION=allow\n" % (nonce, forged_id)).encode()


def try_connect(address):
    last = None
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_UNIX, kind)
        try:
            s.connect(address)
            s.send(entry)
            return "connected"
        except OSError as e:
            # EPROTOTYPE only says the other socket type is the one to try
            if e.errno != errno.EPROTOTYPE or last is None:
                last = errno.errorcode.get(e.errno, str(e.errno))
        finally:
            s.close()
    return last


for path in sys.argv[4:]:
    print(path, try_connect(path))
print("abstract", try_connect("\0" + abstract))

found = []
for top, dirs, files in os.walk("/"):
    if top in ("/proc", "/sys"):
        dirs[:] = []
        continue
    for name in files + dirs:
        p = os.path.join(top, name)
        try:
            if stat.S_ISSOCK(os.lstat(p).st_mode):
                found.append(p)
        except OSError:
            pass
print("sockets:", " ".join(sorted(found)))
print("run:", " ".join(sorted(os.listdir("/run"))))
with open("/dev/shm/sbx-worker-" + nonce, "w") as f:
    f.write("worker\n")
print("shm:", " ".join(sorted(os.listdir("/dev/shm"))))
