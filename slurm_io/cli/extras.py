"""A command whose role's extra is not installed: one line naming the extra, no traceback.

Each host installs only its role (pyproject.toml, docs/deploy.md): a Lustre server
`slurm-io[collector]` (the driver), a login node `slurm-io[client]` (no driver), the database
host `slurm-io[server]`. Commands import their third-party modules lazily, where they run;
rather than guard each of those import sites, JobioGroup.invoke hands every
ModuleNotFoundError to `missing_extra`, which knows which distribution each of those modules
comes from. A module it does not know is not a missing extra but a broken installation (or a
bug): it stays an error with its name, as before.
"""

from __future__ import annotations

# top-level module -> the distribution pip installs it from (all of them in `server`)
DISTRIBUTION_OF_MODULE = {
    "psycopg": "psycopg",
    "psycopg_binary": "psycopg",
    "hostlist": "python-hostlist",
    "jinja2": "jinja2",
    "markupsafe": "jinja2",
    "matplotlib": "matplotlib",
    "numpy": "matplotlib",
    "prometheus_client": "prometheus_client",
    "urwid": "urwid",
    "h11": "h11",
}
# the smallest extra that lets a command run; every other command: `server`
EXTRA_OF_COMMAND = {"collect": "collector"}
# what a login node's `jobio` can do through the service (`server` set; slurm_io/client),
# without a driver
CLIENT_COMMANDS = frozenset({"show", "report", "mail", "usage", "web"})


def missing_module(exc: BaseException) -> str | None:
    """The top-level name of a module of an extra that `exc` (or what caused it) lacks."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 5:
        if isinstance(cur, ModuleNotFoundError) and cur.name:
            top = cur.name.split(".")[0]
            if top in DISTRIBUTION_OF_MODULE:
                return top
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


def missing_extra(exc: BaseException, command: str | None) -> str | None:
    """The one line for `jobio COMMAND` failing on a module of an extra, else None.

    E.g. "jobio top needs slurm-io[server] (no module urwid): pip install 'slurm-io[server]'".
    A client command without a driver is also told that a login node asks the service.
    """
    module = missing_module(exc)
    if module is None:
        return None
    name = command or "this command"
    extra = EXTRA_OF_COMMAND.get(name, "server")
    line = (f"jobio {name} needs slurm-io[{extra}] (no module {module}): "
            f"pip install 'slurm-io[{extra}]'")
    if name in CLIENT_COMMANDS and DISTRIBUTION_OF_MODULE[module] == "psycopg":
        line += ", or on a login node set `server` (the jobio service, docs/service.md)"
    return line
