"""The exporter's HTTP door under attack: honest scrapes' latency, the server's threads and
peak memory, for the bounded door (slurm_io/exporter/bounded.py) and for prometheus_client's
own `start_wsgi_server` that it replaced.

    .venv/bin/python bench/bench_exporter_door.py [--server bounded|prometheus] [--seconds 30]
        [--silent 64] [--trickle 64] [--big 4] [--addresses 32] [--no-attack]

The server runs in a child process with the real prometheus_client WSGI application over a
registry whose one collector sleeps `--scrape-ms` (20; a scrape's database time) and yields a
few hundred series. On loopback, from `--addresses` source addresses (127.0.0.10 ...):
`--silent` connections that send nothing (reconnected when cut), `--trickle` connections that
send a request head one byte per second, `--big` connections that send 6 MB of header lines.
Meanwhile one honest scraper (127.0.0.1) asks GET /metrics every 100 ms. Printed: the honest
scrapes' p50/p99/max latency and failures, and the server process's peak threads and VmHWM
(peak resident memory).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BIG_LINE = b"X-Big: " + b"b" * 60_000 + b"\r\n"


def _serve(kind: str, port: int, scrape_ms: float, ready: Any) -> None:
    from prometheus_client import make_wsgi_app
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.registry import Collector, CollectorRegistry

    class Slow(Collector):
        def collect(self) -> Iterator[GaugeMetricFamily]:
            time.sleep(scrape_ms / 1000)
            g = GaugeMetricFamily("bench_value", "a value", labels=["job"])
            for i in range(300):
                g.add_metric([str(i)], float(i))
            yield g

    reg = CollectorRegistry(auto_describe=False)
    reg.register(Slow())
    if kind == "bounded":
        from slurm_io.exporter import bounded

        bounded.start(make_wsgi_app(reg), "127.0.0.1", port)
    else:
        from prometheus_client import start_wsgi_server

        start_wsgi_server(port, addr="127.0.0.1", registry=reg)
    ready.set()
    while True:
        time.sleep(3600)


def _status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Threads", "VmHWM", "VmRSS"):
            out[key] = int(value.split()[0])
    return out


def _attacker(kind: str, port: int, source: str, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                         source_address=(source, 0))
        except OSError:
            time.sleep(0.2)
            continue
        try:
            s.settimeout(1.0)
            if kind == "silent":
                while not stop.is_set():
                    try:
                        if s.recv(1) == b"":
                            break  # cut: come again
                    except TimeoutError:
                        continue
            elif kind == "trickle":
                head = b"GET /metrics HTTP/1.0\r\nX-Slow: " + b"a" * 10_000 + b"\r\n\r\n"
                for i in range(len(head)):
                    if stop.is_set():
                        break
                    s.sendall(head[i:i + 1])
                    time.sleep(1.0)
            else:  # big
                s.sendall(b"GET /metrics HTTP/1.0\r\n")
                for _ in range(100):
                    s.sendall(BIG_LINE)
                s.sendall(b"\r\n")
                while s.recv(65536):
                    pass
        except OSError:
            pass
        finally:
            s.close()
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", choices=("bounded", "prometheus"), default="bounded")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--silent", type=int, default=64)
    ap.add_argument("--trickle", type=int, default=64)
    ap.add_argument("--big", type=int, default=4)
    ap.add_argument("--addresses", type=int, default=32)
    ap.add_argument("--scrape-ms", type=float, default=20)
    ap.add_argument("--no-attack", action="store_true")
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_serve, args=(a.server, port, a.scrape_ms, ready), daemon=True)
    proc.start()
    ready.wait(30)
    stop = threading.Event()
    threads = []
    if not a.no_attack:
        kinds = ["silent"] * a.silent + ["trickle"] * a.trickle + ["big"] * a.big
        for i, kind in enumerate(kinds):
            src = f"127.0.0.{10 + i % a.addresses}"
            t = threading.Thread(target=_attacker, args=(kind, port, src, stop), daemon=True)
            t.start()
            threads.append(t)
    lat: list[float] = []
    failed = 0
    peak_threads = 0
    end = time.monotonic() + a.seconds
    time.sleep(1.0)  # the attack in place first
    while time.monotonic() < end:
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=15) as r:
                r.read()
            lat.append(time.perf_counter() - t0)
        except OSError:
            failed += 1
        peak_threads = max(peak_threads, _status(proc.pid)["Threads"])
        time.sleep(0.1)
    st = _status(proc.pid)
    stop.set()
    proc.kill()
    lat.sort()

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")

    attack = "no" if a.no_attack else (f"{a.silent} silent, {a.trickle} trickling, "
                                       f"{a.big} big-header from {a.addresses} addresses")
    print(f"server={a.server} attack={attack}")
    print(f"honest scrapes: {len(lat)} ok, {failed} failed; p50 {pct(0.5):.1f} ms, "
          f"p99 {pct(0.99):.1f} ms, max {pct(1.0):.1f} ms"
          + (f", mean {statistics.mean(lat) * 1000:.1f} ms" if lat else ""))
    print(f"server process: peak threads {peak_threads}, VmHWM {st['VmHWM'] / 1024:.1f} MB, "
          f"VmRSS at end {st['VmRSS'] / 1024:.1f} MB (pid {proc.pid}, this pid {os.getpid()})")


if __name__ == "__main__":
    main()
