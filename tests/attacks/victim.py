#!/usr/bin/env python3
"""The victim worker of the attack suite: it holds its secrets (the spec's
$TOKEN and the credential tok) everywhere a sibling might look for them, then
waits. The places: its home, /tmp, /dev/shm, a SysV shared memory segment
(key 0x5b0a7700), an abstract unix socket (@sbx-attack-victim) that answers
with the secret. Writes $HOME/ready (its pid and what it managed) last."""
import ctypes
import os
import socket
import threading

token = os.environ.get("TOKEN", "")
with open(os.path.join(os.environ["CREDENTIALS_DIRECTORY"], "tok")) as f:
    cred = f.read().strip()
secret = ("%s %s\n" % (token, cred)).encode()
done = []


def put(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, secret)
        os.close(fd)
        done.append(path)
    except OSError as e:
        done.append("%s:%s" % (path, e.strerror))


put(os.path.join(os.environ["HOME"], "secret"))
put("/tmp/sbx-victim-secret")
put("/dev/shm/sbx-victim-secret")

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0x5b0a7700, 4096, 0o1000 | 0o600)   # IPC_CREAT, 0600
if shmid >= 0:
    addr = libc.shmat(shmid, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(addr, secret, len(secret))
        done.append("shm")
else:
    done.append("shm:%d" % ctypes.get_errno())

srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    srv.bind("\0sbx-attack-victim")
    srv.listen(8)
    done.append("abstract")

    def answer():
        while True:
            c, _ = srv.accept()
            c.sendall(secret)
            c.close()
    threading.Thread(target=answer, daemon=True).start()
except OSError as e:
    done.append("abstract:%s" % e.strerror)

home = os.environ["HOME"]
with open(os.path.join(home, ".ready"), "w") as f:
    f.write("%d %s\n" % (os.getpid(), " ".join(done)))
os.rename(os.path.join(home, ".ready"), os.path.join(home, "ready"))
threading.Event().wait()
