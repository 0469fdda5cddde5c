"""TLS ClientHellos built without a handshake, for the clients that test the
proxy's reading of the hello: egress-client.py here and the attack suite's
egress-attack.py (tests/attacks), which the test beds copy beside it."""
import ssl


def client_hello(sni):
    """The first flight of Python's TLS client for sni (None: no SNI)."""
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


def with_ech_extension(hello):
    """The same ClientHello with an encrypted_client_hello (0xfe0d) extension
    appended, all enclosing lengths fixed up. The payload is junk: only the
    proxy's handling of the outer hello is under test."""
    rec = bytearray(hello[5:])                       # one record: handshake message
    body = rec[4:]
    pos = 2 + 32
    pos += 1 + body[pos]                             # session id
    pos += 2 + int.from_bytes(body[pos:pos + 2], "big")   # cipher suites
    pos += 1 + body[pos]                             # compression
    ext_len = int.from_bytes(body[pos:pos + 2], "big")
    ech = b"\xfe\x0d" + (8).to_bytes(2, "big") + b"\x00\x00\x01\x00\x01\x2a\x00\x00"
    body[pos:pos + 2] = (ext_len + len(ech)).to_bytes(2, "big")
    body += ech
    msg = b"\x01" + len(body).to_bytes(3, "big") + bytes(body)
    return b"\x16\x03\x01" + len(msg).to_bytes(2, "big") + msg
