#!/usr/bin/env python3
"""Writes what the client matrix downloads into ROOT, served at https://HOST/:
hello.txt; a PEP 503 simple index with one pure-Python wheel (sbxdemo 1.0);
an npm registry document and tarball (sbx-demo-pkg 1.0.0). The git
repository is made by the test itself (git is the tool under test there).
Usage: mkfixtures.py ROOT HOST"""
import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import zipfile

MARK = "sbx-client-matrix-ok"


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def wheel():
    files = {
        "sbxdemo/__init__.py": f'MARK = "{MARK}"\n'.encode(),
        "sbxdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
        "sbxdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: sbx\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "sbxdemo-1.0.dist-info/RECORD,,\n"
    files["sbxdemo-1.0.dist-info/RECORD"] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def npm_tarball():
    files = {
        "package/package.json": json.dumps({"name": "sbx-demo-pkg", "version": "1.0.0", "main": "index.js"}).encode(),
        "package/index.js": f'module.exports = "{MARK}";\n'.encode(),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main():
    root, host = sys.argv[1], sys.argv[2]
    write(f"{root}/hello.txt", f"{MARK}\n".encode())

    whl = wheel()
    name = "sbxdemo-1.0-py3-none-any.whl"
    write(f"{root}/packages/{name}", whl)
    link = f'<a href="/packages/{name}#sha256={hashlib.sha256(whl).hexdigest()}">{name}</a>'
    write(f"{root}/simple/sbxdemo/index.html", f"<!DOCTYPE html><html><body>{link}</body></html>\n".encode())
    write(f"{root}/simple/index.html", b'<!DOCTYPE html><html><body><a href="/simple/sbxdemo/">sbxdemo</a></body></html>\n')

    tgz = npm_tarball()
    tname = "sbx-demo-pkg-1.0.0.tgz"
    write(f"{root}/sbx-demo-pkg/-/{tname}", tgz)
    doc = {
        "name": "sbx-demo-pkg",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {"1.0.0": {
            "name": "sbx-demo-pkg", "version": "1.0.0", "main": "index.js",
            "dist": {
                "tarball": f"https://{host}/sbx-demo-pkg/-/{tname}",
                "shasum": hashlib.sha1(tgz).hexdigest(),
                "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
            },
        }},
    }
    write(f"{root}/sbx-demo-pkg/index.json", json.dumps(doc).encode())


if __name__ == "__main__":
    main()
