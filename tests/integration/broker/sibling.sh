#!/bin/sh
# A sibling worker without Services, from broker.sh: it looks for the other
# worker's secret (ENC, encoded as in probe.sh) wherever it can read, its
# proxy's credential file by path, and a broker listener in its own
# namespace, and records what it found in its home.
ENC=$1 OTHER=$2
cd "$HOME" || exit 1
{
    cat "/run/credentials/sandbox-$OTHER-egress.service/broker-GITHUB" >/dev/null 2>&1
    echo "cred-rc=$?"
    curl -sS -m 10 -o /dev/null http://127.0.0.1:3129/ 2>/dev/null
    echo "listener-rc=$?"
} >results
od -An -N8 -tx1 /dev/urandom | tr -d ' \n' | sed 's/^/sbx-control-/' >control
{ printf '%s\n' "$ENC" | tr 'n-za-m5-90-4' 'a-z0-9'; cat control; echo; } |
    grep -rsaoF -f - /etc /run /var /tmp /dev/shm /srv /opt /home /root /mnt "$HOME" \
        /proc/[0-9]*/environ /proc/[0-9]*/cmdline >found.txt 2>/dev/null
touch ./done
exec sleep 1000
