"""The daemons' DSN: bounds on a dead TCP link unless the site's DSN sets its own."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict

from slurm_io.store.db import DAEMON_TCP, with_dead_link_bounds


def test_a_daemon_gives_up_a_dead_link_by_default() -> None:
    got = conninfo_to_dict(with_dead_link_bounds("host=db1 dbname=slurmio sslmode=verify-full"))
    assert {k: got[k] for k in DAEMON_TCP} == DAEMON_TCP
    assert got["host"] == "db1" and got["sslmode"] == "verify-full"


def test_the_sites_own_settings_win_also_in_a_uri() -> None:
    got = conninfo_to_dict(with_dead_link_bounds(
        "postgresql://collector@db1/slurmio?tcp_user_timeout=5000&keepalives=0"))
    assert got["tcp_user_timeout"] == "5000" and got["keepalives"] == "0"
    assert got["keepalives_idle"] == DAEMON_TCP["keepalives_idle"]
    assert got["user"] == "collector" and got["dbname"] == "slurmio"


def test_a_malformed_dsn_is_left_for_connect_to_refuse() -> None:
    assert with_dead_link_bounds("host='unterminated") == "host='unterminated"
