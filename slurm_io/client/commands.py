"""Client mode of the command line: what `show`, `report`, `mail` and `usage` ask the service.

The command modules (slurm_io/cli) parse flags and print as always; only where the data
comes from changes. A failure is one line (click.ClickException), never a traceback.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from slurm_io.client.http import ServiceError, call
from slurm_io.config import Config
from slurm_io.report.show_docs import Missing, why_missing
from slurm_io.service.protocol import SCHEMA


def _call(cfg: Config, method: str, path: str, params: list[tuple[str, str]]) -> Any:
    # click only for a failure: `jobio JOBID` runs without it (cli/entry.py; issue 25)
    assert cfg.server is not None
    try:
        doc = call(cfg.server, method, path, params, munge_socket=cfg.munge_socket,
                   ca_file=cfg.server_ca, timeout=cfg.server_timeout)
    except ServiceError as e:
        import click

        raise click.ClickException(str(e)) from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        import click

        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise click.ClickException(f"the jobio service at {cfg.server} speaks {got!r}, this "
                                   f"jobio {SCHEMA!r}: upgrade one of them")
    return doc


def fetch_show(cfg: Config, jobids: list[str], user: str | None, start: float | None,
               end: float | None, clusters: str | None = None
               ) -> tuple[list[dict[str, Any]], list[Missing]]:
    """The service's documents of `jobio show` and the jobs it has nothing for, with the line
    the service says why (a service older than `why` gets the line that says no more)."""
    params = [("jobid", j) for j in jobids]
    if clusters is not None:
        params.append(("clusters", clusters))
    if user:
        params.append(("user", user))
        if start is not None:
            params.append(("start", repr(start)))
        if end is not None:
            params.append(("end", repr(end)))
    doc = _call(cfg, "GET", "/v1/show", params)
    ids, why = doc["missing"], doc.get("why")
    if not isinstance(why, list) or len(why) != len(ids):
        why = [why_missing(j, None) for j in ids]
    return doc["jobs"], [Missing(j, line) for j, line in zip(ids, why, strict=True)]


def report(cfg: Config, jobid: str, eml: Path | None, html: Path | None,
           clusters: str | None = None) -> None:
    import click

    params = [("jobid", jobid)] + ([("clusters", clusters)] if clusters is not None else [])
    messages = _call(cfg, "GET", "/v1/report", params)["messages"]
    if not messages:
        raise click.ClickException(f"job {jobid}: no such job (or not yours)")
    if eml or html:
        if len(messages) > 1:
            raise click.UsageError(f"{jobid} is an array of {len(messages)} jobs: name one "
                                   f"task (e.g. {messages[0]['jobid']}) to write files")
        if eml is not None:
            eml.write_bytes(base64.b64decode(messages[0]["eml_base64"]))
        if html is not None:
            html.write_text(messages[0]["html"], encoding="utf-8")
        for path in (eml, html):
            if path is not None:
                click.echo(f"wrote {path}")
        return
    click.echo("\n\n".join(f"Subject: {m['subject']}\n\n{m['text'].rstrip()}"
                           for m in messages))


def mail_set(cfg: Config, on: bool, user: str | None) -> int:
    params = [("enabled", "true" if on else "false")]
    if user:
        params.append(("user", user))
    return int(_call(cfg, "POST", "/v1/mail", params)["uid"])


def mail_status(cfg: Config, user: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = _call(cfg, "GET", "/v1/mail", [("user", user)] if user else [])
    return doc


def fetch_usage(cfg: Config, start: float, end: float, attribution: bool) -> dict[str, Any]:
    params = [("start", repr(start)), ("end", repr(end))]
    if attribution:
        params.append(("attribution", "1"))
    usage: dict[str, Any] = _call(cfg, "GET", "/v1/usage", params)["usage"]
    return usage
