#!/usr/bin/env python3
"""Two small relays that the whole-site test runs inside a network namespace (standard
library only, so any Python runs them; each is stopped by its PID).

    netns_relays.py forward LISTEN_IP:PORT TARGET_IP:PORT
        TCP as it is: the login node's 127.0.0.1:SlurmctldPort to the controller's address
        on the login node's own veth (slurm.conf names the controller 127.0.0.1).
    netns_relays.py capture PORT URL CA OUT
        An HTTP listener on 127.0.0.1:PORT that passes each request to the HTTPS service at
        URL (verified with CA) and appends the request target and Authorization header it
        saw to OUT, as JSON lines: what someone on the wire in front of the service would get.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def forward(listen: str, target: str) -> None:
    host, port = listen.rsplit(":", 1)
    thost, tport = target.rsplit(":", 1)
    srv = socket.create_server((host, int(port)), reuse_port=False)
    while True:
        conn, _ = srv.accept()
        try:
            up = socket.create_connection((thost, int(tport)), timeout=10)
        except OSError:
            conn.close()
            continue
        up.settimeout(None)
        threading.Thread(target=_pipe, args=(conn, up), daemon=True).start()
        threading.Thread(target=_pipe, args=(up, conn), daemon=True).start()


def capture(port: int, url: str, ca: str, out: str) -> None:
    context = ssl.create_default_context(cafile=ca)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            auth = self.headers.get("Authorization", "")
            with open(out, "a") as f:
                f.write(json.dumps({"target": self.path, "authorization": auth}) + "\n")
            req = urllib.request.Request(url.rstrip("/") + self.path, headers={
                "Authorization": auth, "Accept": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=60, context=context) as resp:
                    code, body = resp.status, resp.read()
            except urllib.error.HTTPError as e:
                code, body = e.code, e.read()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "forward":
        forward(sys.argv[2], sys.argv[3])
    else:
        capture(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
