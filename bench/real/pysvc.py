#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/real's third service: a small HTTP API in Python with a large,
sparsely used text. At start it imports C extension modules a real
service pulls in (ssl, sqlite3, decimal, lzma, ctypes, the CJK codecs...),
so it maps the interpreter (5.5 MB of code), libcrypto, libssl, libsqlite3
and a dozen more; each request runs a common step, and every RARE_EVERY-th
also runs the next of the rare tasks below, each in code nothing else
touches: the code a reclaim of "cold" text takes, and the next rare
request faults back in.

Access log, one line a request (as nginx's in bench/real): the end time
(seconds since the epoch), the time the request took (seconds) and the
HTTP status.

Usage: pysvc.py PORT ACCESS_LOG [RARE_EVERY]   (PORT 0: any free port)
"""
import base64
import binascii
import bz2
import codecs
import csv
import ctypes
import ctypes.util
import datetime
import decimal
import email
import fractions
import hashlib
import html
import http.server
import io
import json
import lzma
import math
import os
import pickle
import re
import socket
import sqlite3
import ssl
import statistics
import struct
import sys
import time
import unicodedata
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
import zlib
import zoneinfo

TEXT = ("Under memory pressure Linux evicts mapped program text; "
        "the rarely run paths pay for it. ") * 40
XML = "<r>" + "".join(f'<i n="{i}"><v>{i * i}</v></i>' for i in range(200)) + "</r>"


def task_decimal():
    with decimal.localcontext() as c:
        c.prec = 60
        return str(decimal.Decimal(2).sqrt() * decimal.Decimal("1.1") ** 40)


def task_sqlite():
    db = sqlite3.connect(":memory:")
    db.execute("create table t (k integer primary key, v text)")
    db.executemany("insert into t (v) values (?)", [(str(i * 7),) for i in range(200)])
    (n,) = db.execute("select count(*) from t where v like '%7%'").fetchone()
    db.close()
    return n


def task_lzma():
    # preset 0: a 256 KiB dictionary; the default (6) allocates 94 MiB
    return len(lzma.decompress(lzma.compress(TEXT.encode(), preset=0)))


def task_bz2():
    return len(bz2.decompress(bz2.compress(TEXT.encode())))


def task_zlib():
    return zlib.crc32(zlib.compress(TEXT.encode(), 9))


def task_xml():
    return sum(int(v.text) for v in ET.fromstring(XML).iter("v"))


def task_ssl():
    # not create_default_context(): parsing the CA bundle takes 30 ms
    # natively, a second under TCG, and would set the tail by itself
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.set_ciphers("ECDHE+AESGCM:ECDHE+CHACHA20")
    return len(ctx.get_ciphers()) + len(hashlib.pbkdf2_hmac("sha512", b"pw", b"salt", 200))


def task_unicode():
    return len(unicodedata.normalize("NFKD", "Ǆemo ﬁle № ½ " * 50))


def task_cjk():
    s = "日本語のテキスト 中文 한국어 "
    return sum(len(codecs.encode(s, c, "replace"))
               for c in ("shift_jis", "gb18030", "euc_kr", "big5", "iso2022_jp"))


LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def task_ctypes():
    arr = (ctypes.c_int * 64)(*range(64, 0, -1))
    LIBC.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), CMP(lambda a, b: a[0] - b[0]))
    return arr[0]


def task_csv():
    out = io.StringIO()
    w = csv.writer(out)
    for i in range(100):
        w.writerow([i, f"name {i}", i / 3])
    return sum(1 for _ in csv.reader(io.StringIO(out.getvalue())))


def task_pickle():
    obj = {"a": list(range(300)), "b": {str(i): (i, float(i)) for i in range(100)}}
    return len(pickle.loads(pickle.dumps(obj, 5))["b"])


def task_stats():
    xs = [fractions.Fraction(i, 7) for i in range(1, 60)]
    return float(statistics.median(xs)) + statistics.pstdev(map(float, xs)) + math.lgamma(30.5)


def task_zone():
    t = datetime.datetime(2026, 3, 29, 0, 30, tzinfo=datetime.timezone.utc)
    return t.astimezone(zoneinfo.ZoneInfo("Europe/Paris")).isoformat()


def task_ids():
    u = uuid.uuid5(uuid.NAMESPACE_DNS, "execguard.example")
    return binascii.crc32(base64.b85encode(u.bytes + struct.pack("<dq", math.pi, 42)))


def task_hashes():
    return hashlib.sha3_512(TEXT.encode()).hexdigest()[:8] + hashlib.blake2s(TEXT.encode()).hexdigest()[:8]


def task_email():
    msg = email.message_from_string("Subject: report\nTo: ops@example.com\n\n" + TEXT[:500])
    return len(msg.get_payload()) + len(msg["Subject"])


def task_url():
    q = urllib.parse.urlencode({"q": "<a&b>", "n": 3})
    return len(html.unescape(html.escape(urllib.parse.unquote_plus(q))))


RARE = [task_decimal, task_sqlite, task_lzma, task_bz2, task_zlib, task_xml, task_ssl,
        task_unicode, task_cjk, task_ctypes, task_csv, task_pickle, task_stats, task_zone,
        task_ids, task_hashes, task_email, task_url]
WORD = re.compile(r"\b(\w+)ed\b")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    served = 0

    def do_GET(self):
        t0 = time.monotonic()
        n = Handler.served
        Handler.served += 1
        doc = {"n": n, "words": WORD.findall(TEXT[:400]),
               "sum": hashlib.sha256(str(n).encode()).hexdigest()}
        if n % self.server.rare_every == 0:
            task = RARE[(n // self.server.rare_every) % len(RARE)]
            doc[task.__name__] = str(task())
        body = json.dumps(json.loads(json.dumps(doc))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        log = self.server.access_log
        log.write(f"{time.time():.6f} {time.monotonic() - t0:.6f} 200\n")
        log.flush()

    def log_message(self, *args):
        pass


def notify_ready():
    """Type=notify: systemctl start returns once the port is open."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return
    if path.startswith("@"):
        path = "\0" + path[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.connect(path)
        s.sendall(b"READY=1")


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    port, log = int(sys.argv[1]), sys.argv[2]
    # every task once before serving: what they need is loaded and mapped
    for task in RARE:
        task()
    srv = http.server.HTTPServer(("127.0.0.1", port), Handler)
    srv.rare_every = int(sys.argv[3]) if len(sys.argv) == 4 else 4
    srv.access_log = open(log, "a", buffering=1)
    print(f"pysvc: serving on 127.0.0.1:{srv.server_address[1]}, {len(RARE)} rare tasks, one every "
          f"{srv.rare_every} requests", flush=True)
    notify_ready()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
