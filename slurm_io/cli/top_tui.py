"""The interactive `jobio top`: a screen refreshed in place (urwid), keys to change the view.

urwid (a kept, pure-Python terminal UI library) draws the header, the table and a key line;
the table comes from slurm_io.report.top like the plain output, so both show the same
figures. The database is asked once per refresh (one interval, two small queries); a change of
sort, grouping or rates re-ranks the loaded interval without a query.

Keys: s / S next / previous sort counter, g next grouping, t totals <-> rates,
space pause, + / - replay speed (with --at), q quit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urwid

from slurm_io.report import top as top_mod
from slurm_io.report.load import GROUPS, Load

SORT_CYCLE = ("write", "read", "meta", "reqs", "open", "close", "getattr", "setattr", "mkdir",
              "unlink", "rename", "write_bytes_samples", "read_bytes_samples", "punch")
KEYS = "s/S sort  g group  t totals/rates  space pause  +/- speed  q quit"


@dataclass
class State:
    sort: str
    by: str
    rates: bool
    at: float | None  # replay position (None: live)
    speed: float
    delay: float
    paused: bool = False


class TopScreen:
    """The urwid widgets and the refresh loop around a `fetch(at) -> Load` function."""

    def __init__(self, fetch: Callable[[float | None], Load], state: State, *,
                 lines: int | None = None, options: dict[str, Any]) -> None:
        self.fetch = fetch
        self.lines = lines
        self.state = state
        self.options = options
        self.ld: Load | None = None
        self.head = urwid.Text("")
        self.body = urwid.SimpleFocusListWalker([])
        self.foot = urwid.Text(("foot", KEYS))
        self.frame = urwid.Frame(urwid.ListBox(self.body),
                                 header=urwid.AttrMap(self.head, "head"),
                                 footer=urwid.AttrMap(self.foot, "foot"))
        self.loop: urwid.MainLoop | None = None

    def draw(self) -> None:
        if self.ld is None:
            return
        s = self.state
        rows = self.lines
        if rows is None and self.loop is not None:
            rows = max(3, self.loop.screen.get_cols_rows()[1] - 6)
        t = top_mod.view(self.ld, sort=s.sort, by=s.by, rates=s.rates, limit=rows,
                         **self.options)
        self.head.set_text("\n".join(top_mod.header(t)))
        lines = top_mod.table(t) if t.at is not None else []
        self.body[:] = [urwid.AttrMap(urwid.Text(ln, wrap="clip"), "colhead" if i == 0 else None)
                        for i, ln in enumerate(lines)]
        mode = ("paused" if s.paused else
                "live" if s.at is None else f"replay x{s.speed:g}")
        self.foot.set_text(f"{KEYS}   [{mode}, every {s.delay:g} s]")

    def refresh(self, loop: Any = None, _data: Any = None) -> None:
        s = self.state
        if not s.paused or self.ld is None:
            self.ld = self.fetch(s.at)
            if s.at is not None:
                s.at += s.speed * s.delay
        self.draw()
        if self.loop is not None:
            self.loop.set_alarm_in(s.delay, self.refresh)

    def keypress(self, key: str) -> None:
        s = self.state
        if key in ("q", "Q", "esc"):
            raise urwid.ExitMainLoop()
        if key in ("s", "S"):
            i = SORT_CYCLE.index(s.sort) if s.sort in SORT_CYCLE else -1
            s.sort = SORT_CYCLE[(i + (1 if key == "s" else -1)) % len(SORT_CYCLE)]
        elif key == "g":
            s.by = GROUPS[(GROUPS.index(s.by) + 1) % len(GROUPS)]
        elif key == "t":
            s.rates = not s.rates
        elif key == " ":
            s.paused = not s.paused
        elif key in ("+", "="):
            s.speed *= 2
        elif key == "-":
            s.speed = max(1 / 64, s.speed / 2)
        else:
            return
        self.draw()

    def run(self) -> None:
        palette = [("head", "bold", ""), ("colhead", "standout", ""), ("foot", "dark cyan", "")]
        self.loop = urwid.MainLoop(self.frame, palette, unhandled_input=self.keypress,
                                   handle_mouse=False)
        self.refresh()
        with contextlib.suppress(KeyboardInterrupt):
            self.loop.run()


def run(fetch: Callable[[float | None], Load], *, sort: str, by: str, rates: bool,
        at: float | None, speed: float, delay: float, lines: int | None = None,
        **options: Any) -> None:
    """Run the screen until q (or Ctrl-C)."""
    TopScreen(fetch, State(sort, by, rates, at, speed, delay), lines=lines,
              options=options).run()
