"""The shape of slurm_io, checked from its source: no import cycle between packages or
modules, no import against the layers, SQL only in the query modules, a light hook.

The import graph is read with `ast` (no import of slurm_io itself, so a module that cannot
be imported here -- urwid absent, a broken dependency -- is still checked). Every import
counts, also one inside a function or under TYPE_CHECKING: a lazy import is still a
dependency, and a circle of them is still a circle a reader has to untangle.

LAYERS is the table of docs/architecture.md (the two must say the same). A module belongs
to the layer of the longest prefix that names it; it may import its own layer and the ones
below, never one above; and nothing outside slurm_io.cli imports slurm_io.cli.

KNOWN_* are the violations in parts other engineers were rewriting when this test was
written (issue 19): they are listed so that the test guards everything else now; the lead
empties them after the merge, and a listed violation that has gone fails the test (so the
lists cannot outlive what they excuse).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "slurm_io"

# Bottom to top. The same table is in docs/architecture.md ("Layers").
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("leaves", (
        "slurm_io", "model", "counter_names", "text", "timeparse", "clock", "paths", "fsutil",
        "procs", "munge_lib", "config", "timebuckets",
    )),
    ("pure core", (
        "parse", "repair", "delta", "simulate",
        "slurm.fields", "slurm.nodes", "slurm.scontrol", "slurm.sacct_json",
        "jobs.fields", "jobs.hookenv", "jobs.runs", "jobs.sacct", "jobs.spec",
        "jobs.info", "attribute.rows", "attribute.result", "attribute.around", "attribute.bursts",
        "attribute.caps",
        "attribute.core",
        "attribute.evidence",
        "attribute.joint", "attribute.leaks", "attribute.mdt_course", "attribute.observed",
        "attribute.owners", "attribute.phases",
        "attribute.ranges", "attribute.readings",
        "attribute.sizes", "attribute.sole_owner", "attribute.striped", "lassi.metrics",
        "lassi.summary",
        "report.counters", "report.jobreport",
        "mail.view", "mail.view_model", "mail.advice", "mail.fmt", "alerts.rules",
    )),
    ("stores and adapters", (
        "store", "slurm", "munge", "notify.smtp", "notify.hookspool", "notify.queue",
        "jobs.store", "jobs.source", "jobs.uids", "collect.source", "attribute.stored",
    )),
    ("domain", (
        "attribute", "jobs", "lassi", "report", "mail", "notify", "alerts", "collect",
        "exporter",
    )),
    ("daemons and commands", (
        "collect.daemon", "notify.hook", "notify.commands", "alerts.run", "exporter.server",
        "service", "client", "web", "cli", "demo",
    )),
)

ADAPTERS = 2  # the rank of "stores and adapters" in LAYERS


def is_query_module(mod: str) -> bool:
    """A package's query module by its name: `sql`, `queries` or `*_sql`. Wherever it
    lives, it is an adapter (it talks to PostgreSQL) and may hold SQL."""
    last = mod.rpartition(".")[2]
    return last in ("sql", "queries") or last.endswith("_sql")


# Modules that own SQL (besides everything under store/ and every query module by name).
QUERY_MODULES: frozenset[str] = frozenset({"jobs.store", "attribute.stored"})

# -- violations in parts being rewritten in parallel (issue 19); emptied after the merge --
KNOWN_PACKAGE_CYCLES: frozenset[frozenset[str]] = frozenset()
KNOWN_MODULE_CYCLES: frozenset[frozenset[str]] = frozenset()
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()
KNOWN_PRIVATE: frozenset[tuple[str, str]] = frozenset()


def _short(name: str) -> str:
    return name.removeprefix("slurm_io.") if name != "slurm_io" else name


def modules() -> dict[str, Path]:
    """Dotted name (without `slurm_io.`) -> file, for every module of the package."""
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[_short(".".join(parts))] = path
    return out


def _imported(mod: str, path: Path) -> Iterable[tuple[str, str | None]]:
    """(module or package named, the name taken from it or None) of every slurm_io import."""
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    full_package = "slurm_io" if package in ("", "slurm_io") else f"slurm_io.{package}"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "slurm_io":
                    yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = full_package.split(".")
                base = base[:len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "slurm_io":
                continue
            for alias in node.names:
                yield name, alias.name


def graph() -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    """Module -> the modules it imports; and (importer, module.name) of every private name
    (`_x`) imported from another module."""
    mods = modules()

    def resolve(name: str) -> str:
        name = _short(name)
        while name not in mods and "." in name:
            name = name.rpartition(".")[0]
        return name

    edges: dict[str, set[str]] = defaultdict(set)
    private: set[tuple[str, str]] = set()
    for mod, path in mods.items():
        for target, name in _imported(mod, path):
            sub = _short(f"{target}.{name}") if name else None
            dest = sub if sub in mods else resolve(target)
            if dest != mod:
                edges[mod].add(dest)
            if name and name.startswith("_") and not name.startswith("__") and dest != mod \
                    and sub not in mods:
                private.add((mod, f"{dest}.{name}"))
        edges.setdefault(mod, set())
    return dict(edges), private


def package_of(mod: str) -> str:
    return mod.split(".")[0]


def cycles(g: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(frozenset(comp))
    return found


def layer_of(mod: str) -> int:
    """Index in LAYERS of the longest prefix naming `mod` (a query module by its name:
    the adapters); KeyError when none does."""
    if is_query_module(mod):
        return ADAPTERS
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), rank)
    if best is None:
        raise KeyError(mod)
    return best[1]


def _check_known(found: set, known: frozenset, what: str) -> None:
    """Fail on anything found that is not known, and on anything known no longer found."""
    def show(items: set) -> list[str]:
        return sorted(" <-> ".join(sorted(i)) if isinstance(i, frozenset) else " -> ".join(i)
                      for i in items)

    assert not found - known, f"{what}: {show(found - known)}"
    assert not known - found, f"{what}: listed as known but gone, remove: {show(known - found)}"


# -- the checks --------------------------------------------------------------------------------
def test_the_adapters_are_where_the_query_modules_go() -> None:
    assert LAYERS[ADAPTERS][0] == "stores and adapters"


def test_every_module_has_a_layer() -> None:
    missing = []
    for mod in modules():
        try:
            layer_of(mod)
        except KeyError:
            missing.append(mod)
    assert not missing, f"not in LAYERS (here and in docs/architecture.md): {missing}"


def test_no_cycle_between_packages() -> None:
    g, _ = graph()
    packages: dict[str, set[str]] = defaultdict(set)
    for mod, targets in g.items():
        for t in targets:
            if package_of(t) != package_of(mod):
                packages[package_of(mod)].add(package_of(t))
    _check_known(set(cycles(dict(packages))), KNOWN_PACKAGE_CYCLES, "package cycles")


def test_no_cycle_between_modules() -> None:
    g, _ = graph()
    _check_known(set(cycles(g)), KNOWN_MODULE_CYCLES, "module cycles")


def test_no_import_against_the_layers() -> None:
    g, _ = graph()
    upward = {(m, t) for m, ts in g.items() for t in ts if layer_of(t) > layer_of(m)}
    _check_known(upward, KNOWN_UPWARD, "imports of a higher layer (importer, imported)")


def test_nothing_imports_the_command_line() -> None:
    g, _ = graph()
    bad = sorted((m, t) for m, ts in g.items() for t in ts
                 if package_of(t) == "cli" and package_of(m) != "cli")
    assert not bad, bad


def test_no_private_name_is_imported_from_another_module() -> None:
    _, private = graph()
    _check_known(private, KNOWN_PRIVATE, "private names imported across modules")


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:` (an import for annotations only is no
    dependency on the driver at run time: a client can import the module without psycopg)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.If) and isinstance(child.test, ast.Name)
                    and child.test.id == "TYPE_CHECKING"):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def sql_outside_query_modules() -> list[str]:
    """Modules outside store/, the query modules and QUERY_MODULES that import psycopg or
    call `.execute(`, `.executemany(` or `.copy(<statement>)`."""
    bad = []
    for mod, path in modules().items():
        if package_of(mod) == "store" or is_query_module(mod) or mod in QUERY_MODULES:
            continue
        reasons = set()
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                if any(a.name.split(".")[0] == "psycopg" for a in node.names):
                    reasons.add("imports psycopg")
            elif isinstance(node, ast.ImportFrom) and not node.level:
                if (node.module or "").split(".")[0] == "psycopg":
                    reasons.add("imports psycopg")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if attr in ("execute", "executemany") or (attr == "copy" and node.args):
                    reasons.add(f".{attr}(")
        if reasons:
            bad.append(f"{mod}: {', '.join(sorted(reasons))}")
    return bad


def test_sql_only_in_query_modules() -> None:
    bad = sql_outside_query_modules()
    assert not bad, "\n".join(bad)


# -- the job-end hook stays light ----------------------------------------------------------------
HEAVY = ("psycopg", "jinja2", "matplotlib", "urwid", "cheroot", "h11", "hostlist", "click")

_HOOK_PROBE = """
import json, sys
import slurm_io.notify.hook as hook
outcome = hook.run({"SLURM_JOB_ID": "4242", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"},
                   fork=False)
# the background child's Slurm call: the same seam, standard library only
from slurm_io import procs
from slurm_io.slurm.jobend import scontrol_job_times
try:
    scontrol_job_times(sys.argv[1], 4242, timeout=5)
    asked = "ran"
except OSError:
    asked = "not found"
names = sorted(n for n in sys.modules if n != "__main__")
print(json.dumps({"outcome": outcome, "asked": asked, "modules": names,
                  "stdlib": sorted(sys.stdlib_module_names)}))
"""


def test_the_hook_imports_only_the_standard_library(tmp_path: Path) -> None:
    """Run as epilog/jobio-epilog runs it from a checkout (-S -s -P, slurm_io from the
    tree): the hook's own work (spool, no database) and its child's scontrol call import
    nothing but the standard library and slurm_io -- with -S no site-packages could be
    found anyway, so an import of psycopg & co would have failed the run."""
    import json

    spool = tmp_path / "spool"
    config = tmp_path / "config.toml"
    config.write_text(f'[hook]\nspool_dir = "{spool}"\ndb_timeout = 0\n')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
           "SLURM_IO_CONFIG": str(config)}
    out = subprocess.run([sys.executable, "-S", "-s", "-P", "-c", _HOOK_PROBE,
                          str(tmp_path / "no-scontrol")], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    seen = json.loads(out.stdout)
    assert seen["outcome"] == "spooled" and (spool / "4242.json").exists()
    assert seen["asked"] == "not found"
    stdlib = set(seen["stdlib"])
    foreign = [m for m in seen["modules"]
               if m.split(".")[0] not in stdlib and m.split(".")[0] != "slurm_io"]
    assert not foreign, foreign
    assert not [m for m in seen["modules"] if m.split(".")[0] in HEAVY]
    assert "slurm_io.slurm.commands" not in seen["modules"]  # the daemons' Slurm object


def test_the_layer_table_of_the_docs_is_this_one() -> None:
    """docs/architecture.md shows the layers to people; it must not drift from LAYERS."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| (\d)\. ([a-z ]+) \| (.*?) \|", line)
        if m:
            rows[m.group(2)] = (int(m.group(1)), re.findall(r"`([a-z_.]+)`", m.group(3)))
    assert {name: (i, list(prefixes)) for i, (name, prefixes) in enumerate(LAYERS, 1)} == rows
