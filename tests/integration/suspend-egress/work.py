#!/usr/bin/env python3
"""A gVisor worker for suspend-egress.sh: holds a counter in memory and, every
0.3 s, appends one line to $HOME/log: the counter, an HTTPS GET through the
egress proxy (https_proxy) to the allowed host, a CONNECT to a host outside
the allow-list, and a call of service API through the broker
(SANDBOX_SERVICE_API_URL, plain http; the broker adds the credential).
Usage: work.py CA_FILE ALLOWED_HOST FORBIDDEN_HOST"""
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

ca, allowed, forbidden = sys.argv[1:4]
ctx = ssl.create_default_context(cafile=ca)
log = open(os.path.join(os.environ["HOME"], "log"), "a", buffering=1)


def get(url, **kw):
    try:
        with urllib.request.urlopen(url, timeout=5, **kw) as r:
            return "%d:%s" % (r.status, r.read().decode("ascii", "replace")[:16])
    except urllib.error.HTTPError as e:
        return "http%d" % e.code
    except Exception as e:   # a refused CONNECT is an OSError from http.client
        return type(e).__name__ + ":" + str(e).replace(" ", "_")[:60]


i = 0
while True:
    i += 1
    egress = get("https://%s/egress/%d" % (allowed, i), context=ctx)
    refused = get("https://%s/refused/%d" % (forbidden, i), context=ctx)
    service = get("%s/svc/%d" % (os.environ["SANDBOX_SERVICE_API_URL"], i))
    log.write("%d egress=%s refused=%s service=%s\n" % (i, egress, refused, service))
    time.sleep(0.3)
