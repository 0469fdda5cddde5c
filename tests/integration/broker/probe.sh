#!/bin/sh
# Run by a worker with Services GITHUB (GET only) and PRIV (a name that
# resolves to a private address), from broker.sh. It calls the broker with
# curl, Python's urllib and Node's fetch, keeps every answer in its home,
# and records what of the secret it could find: its environment, its
# credentials, the journal, a dump of its own memory, and a grep over what
# it can read. The secret's encoded form ENC (tr-rotated) is its only
# argument: decoded, it exists in a pipe and grep's memory, never in a file,
# an argv or an environment. TAG starts every path it asks for. Root reads
# the home afterwards. Then it serves requests root asks for by file (go-N
# -> res-N), for the restart check.
#   probe.sh ENC TAG
ENC=$1 TAG=$2
W=$(dirname "$0")
U=$SANDBOX_SERVICE_GITHUB_URL
cd "$HOME" || exit 1
{
    curl -sS -m 30 -D curl.hdr -o curl.out -H 'Authorization: Bearer worker-forged' "$U/$TAG/curl"
    echo "curl-rc=$?"
    TAG=$TAG python3 -c 'import os, urllib.request as u
r = u.Request(os.environ["SANDBOX_SERVICE_GITHUB_URL"] + "/" + os.environ["TAG"] + "/python", headers={"Authorization": "token worker-forged"})
print(u.urlopen(r, timeout=30).read().decode())' >python.out 2>python.err
    echo "python-rc=$?"
    node "$W/node-fetch.js" "$U/$TAG/node" >node.out 2>node.err
    echo "node-rc=$?"
    curl -sS -m 30 -X DELETE -D refused.hdr -o refused.body "$U/$TAG/delete"
    echo "refused-rc=$?"
    curl -sS -m 30 -D private.hdr -o private.body "$SANDBOX_SERVICE_PRIV_URL/$TAG/private"
    echo "private-rc=$?"
    python3 "$W/memdump.py" "$U/$TAG/memdump" core >memdump.out 2>&1
    echo "memdump-rc=$?"
} >results 2>&1
env >env.txt
cat /proc/self/environ >environ.bin
ls -la "${CREDENTIALS_DIRECTORY:-/nonexistent}" >creds.ls 2>&1
cat "${CREDENTIALS_DIRECTORY:-/nonexistent}"/* >creds.cat 2>&1
journalctl --no-pager -n 5000 >journal.txt 2>&1
# A control string only this file holds: the same grep must find it, so an
# empty result means "searched and absent", not "could not search".
od -An -N8 -tx1 /dev/urandom | tr -d ' \n' | sed 's/^/sbx-control-/' >control
{ printf '%s\n' "$ENC" | tr 'n-za-m5-90-4' 'a-z0-9'; cat control; echo; } |
    grep -rsaoF -f - /etc /run /var /tmp /dev/shm /srv /opt /home /root /mnt "$HOME" \
        /proc/[0-9]*/environ /proc/[0-9]*/cmdline >found.txt 2>/dev/null
touch ./done
while :; do
    for g in go-*; do
        [ -e "$g" ] || continue
        n=${g#go-}
        rm -f "$g"
        curl -sS -m 30 -o "res.tmp" -w '%{http_code}\n' "$U/restart/$n" >code.tmp 2>&1
        cat code.tmp >>res.tmp
        mv res.tmp "res-$n"
    done
    sleep 0.2
done
