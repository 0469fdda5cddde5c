#!/usr/bin/env bash
# The client matrix (issue 14): the clients agents really run reach an allowed
# HTTPS host through the worker's egress proxy, from inside a trusted and a
# gVisor worker, and are refused with the proxy's reason for a host outside
# the allow-list: curl, wget, Python's urllib (http.client sends
# "CONNECT host:443 HTTP/1.0"), pip from a local index, git clone over HTTPS
# (dumb protocol), Node's https with an explicit tunnelling agent, npm against
# a local registry, OpenSSL s_client -proxy.
# The upstream lives in a network namespace of its own behind a veth, on an
# ordinary unicast address (testbed.md), so the proxy treats it as public.
source "$(dirname "$0")/../integration/lib.sh"
tap_init "$@"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
W=/etc/sbx-clients              # readable by workers: their /tmp is private
CONF=/etc/sandboxd/sandboxd.conf
UP=11.0.0.10
HOST=pkgs.clients.test
CA=$W/cert.pem
MARK=sbx-client-matrix-ok       # what every fixture answers (mkfixtures.py)

cleanup() {
    ct sh -c "systemctl stop sbx-clients-up 2>/dev/null; $W/upstream-netns.sh down
              sed -i '/# sbx-clients$/d' /etc/hosts
              [ -f $CONF.orig ] && mv $CONF.orig $CONF; rm -rf $W; systemctl restart sandboxd" >/dev/null 2>&1
}
trap 'cleanup; _tap_cleanup' EXIT

ct mkdir -p "$W"
for f in www-upstream.py mkfixtures.py node-proxy-get.js; do
    cat "$SRC/tests/clients/$f" > "/proc/$CT_PID/root$W/$f"
done
upstream_netns_install "$W"
ct sh -ec "
    $W/upstream-netns.sh up $UP
    echo '$UP $HOST # sbx-clients' >> /etc/hosts
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout $W/key.pem -out $CA -subj /CN=$HOST \
        -addext 'subjectAltName=DNS:*.clients.test' 2>/dev/null
    python3 $W/mkfixtures.py $W/www $HOST
    git init -q --bare $W/www/repo.git
    git init -q $W/src; echo $MARK > $W/src/README
    git -C $W/src add README
    git -C $W/src -c user.name=t -c user.email=t@t commit -qm fixture
    git -C $W/src push -q $W/www/repo.git HEAD:refs/heads/main
    git -C $W/www/repo.git symbolic-ref HEAD refs/heads/main
    git -C $W/www/repo.git update-server-info
    chmod -R a+rX $W; chmod 600 $W/key.pem
    systemd-run -q --unit=sbx-clients-up ip netns exec upstream python3 $W/www-upstream.py $UP 443 $CA $W/key.pem $W/www
    cp $CONF $CONF.orig; printf '[Egress]\nFloor=*.clients.test\n' > $CONF; systemctl restart sandboxd"
wait_until 20 ct curl -sS -m 5 --cacert "$CA" --resolve "$HOST:443:$UP" "https://$HOST/hello.txt"
check_output "setup: the upstream answers TLS at $UP:443, behind a veth, not on the container's own addresses" "^$MARK\$" \
    ct curl -sS -m 5 --cacert "$CA" --resolve "$HOST:443:$UP" "https://$HOST/hello.txt"

# Each client's command for a host H, run by the worker's shell (so \$HOME and
# \$HTTPS_PROXY are the worker's); it prints the fixture's mark on success.
# (Python's TLS server closes without close_notify, which OpenSSL 3 reports
# as an error unless told the body's end is the connection's.)
client_cmd() {
    local client=$1 h=$2
    case $client in
        curl) echo "curl -sS -m 30 --cacert $CA https://$h/hello.txt" ;;
        wget) echo "wget -q -O- -T 30 -t 1 --ca-certificate=$CA https://$h/hello.txt" ;;
        python-urllib) echo "python3 -c 'import ssl, sys, urllib.request as u; ctx = ssl.create_default_context(cafile=sys.argv[1]); print(u.urlopen(sys.argv[2], context=ctx, timeout=30).read().decode().strip())' $CA https://$h/hello.txt" ;;
        pip) echo "python3 -m pip install -q --disable-pip-version-check --no-cache-dir --break-system-packages --retries 0 --timeout 30 --target \$HOME/py-$h --index-url https://$h/simple/ --cert $CA sbxdemo && PYTHONPATH=\$HOME/py-$h python3 -c 'import sbxdemo; print(sbxdemo.MARK)'" ;;
        git) echo "git -c http.sslCAInfo=$CA clone -q https://$h/repo.git \$HOME/git-$h && cat \$HOME/git-$h/README" ;;
        node) echo "node $W/node-proxy-get.js https://$h/hello.txt $CA" ;;
        npm) echo "npm install --loglevel=error --no-audit --no-fund --no-update-notifier --fetch-retries=0 --registry=https://$h/ --cafile=$CA --https-proxy=\$HTTPS_PROXY --prefix=\$HOME/npm-$h sbx-demo-pkg && node -p 'require(process.argv[1])' \$HOME/npm-$h/node_modules/sbx-demo-pkg" ;;
        openssl) echo "printf 'GET /hello.txt HTTP/1.0\\r\\nHost: $h\\r\\n\\r\\n' | openssl s_client -quiet -verify_return_error -ignore_unexpected_eof -proxy \${HTTPS_PROXY#http://} -connect $h:443 -servername $h -CAfile $CA" ;;
    esac
}

CLIENTS="curl wget python-urllib pip git node npm openssl"
for class in trusted standard; do
    for client in $CLIENTS; do
        denied=forbidden-$client-$class.clients.test
        script="$(client_cmd $client $HOST); echo allowed-rc=\$?; $(client_cmd $client $denied) </dev/null >/dev/null 2>&1; echo denied-rc=\$?"
        out=$(ct timeout 240 sandboxctl run --class "$class" --memory 1G --allow "$HOST" -- /bin/sh -c "$script" </dev/null 2>&1)
        if grep -qx "$MARK" <<<"$out" && grep -qx 'allowed-rc=0' <<<"$out"; then
            ok "$class: $client fetches from an allowed host through the worker's proxy"
        else
            not_ok "$class: $client fetches from an allowed host through the worker's proxy" "$(tail -n 15 <<<"$out")"
        fi
        if grep -Eqx 'denied-rc=[1-9][0-9]*' <<<"$out" &&
            journal_has 'EGRESS_REASON=not-in-allow-list' -o verbose EGRESS_DECISION=deny EGRESS_HOST="$denied"; then
            ok "$class: $client is refused for a host outside the allow-list (403 not-in-allow-list)"
        else
            not_ok "$class: $client is refused for a host outside the allow-list (403 not-in-allow-list)" \
                "$(tail -n 5 <<<"$out")" "$(journal -o verbose EGRESS_HOST="$denied" | grep EGRESS_ | head -n 5)"
        fi
    done
done

tap_done
