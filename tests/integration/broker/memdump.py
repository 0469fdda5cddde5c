"""Calls URL through the broker, then writes every writable mapping of its
own memory (heap, stack, anonymous maps: where anything it received would
be) to OUT and prints the byte count: a worker's dump of its own process.
Usage: memdump.py URL OUT"""
import sys
import urllib.request

urllib.request.urlopen(sys.argv[1], timeout=30).read()
total = 0
with open(sys.argv[2], "wb") as out, open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps.read().splitlines():
        fields = line.split()
        if not fields[1].startswith("rw"):
            continue
        lo, hi = (int(x, 16) for x in fields[0].split("-"))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            continue
        out.write(data)
        total += len(data)
print(total)
