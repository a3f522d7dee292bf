"""`jobio` imports a command's module when the command is asked for (issue 25: start-up).

app.COMMAND_MODULES names, for every command, the module of slurm_io.cli that registers it:
a command missing from it would vanish from `jobio`, a wrong module would leave it
unregistered. Each check runs in a fresh interpreter, where no command module is imported yet.
"""

from __future__ import annotations

import json
import subprocess
import sys


def fresh(code: str) -> object:
    """What `code` prints as JSON, run by a new interpreter of this venv."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout)


def test_every_module_registers_exactly_the_commands_the_table_gives_it() -> None:
    got = fresh(
        "import json, sys\n"
        "from slurm_io.cli.app import COMMAND_MODULES, main\n"
        "before = sorted(m for m in sys.modules if m.startswith('slurm_io.cli.'))\n"
        "out = {'before': before, 'start': sorted(main.commands), 'by_module': {}}\n"
        "for module in sorted(set(COMMAND_MODULES.values())):\n"
        "    seen = set(main.commands)\n"
        "    __import__(f'slurm_io.cli.{module}')\n"
        "    out['by_module'][module] = sorted(set(main.commands) - seen)\n"
        "print(json.dumps(out))\n")
    assert isinstance(got, dict)
    assert got["start"] == []  # nothing registered before a command is asked for
    assert "slurm_io.cli.views" not in got["before"]
    from slurm_io.cli.app import COMMAND_MODULES

    expected: dict[str, list[str]] = {}
    for name, module in COMMAND_MODULES.items():
        expected.setdefault(module, []).append(name)
    assert got["by_module"] == {m: sorted(names) for m, names in expected.items()}


def test_a_command_loads_its_module_alone() -> None:
    got = fresh(
        "import json, sys, click\n"
        "from slurm_io.cli import main\n"
        "ctx = click.Context(main)\n"
        "cmd = main.get_command(ctx, 'show')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('slurm_io.cli.'))\n"
        "print(json.dumps([cmd.name, loaded, main.get_command(ctx, 'nosuch') is None]))\n")
    assert got == ["show", ["slurm_io.cli.app", "slurm_io.cli.extras", "slurm_io.cli.views"],
                   True]


def test_the_help_lists_every_command() -> None:
    got = fresh(
        "import json, click\n"
        "from slurm_io.cli.app import COMMAND_MODULES, main\n"
        "print(json.dumps([main.list_commands(click.Context(main)), sorted(COMMAND_MODULES)]))\n")
    assert isinstance(got, list)
    listed, table = got
    assert listed == table
