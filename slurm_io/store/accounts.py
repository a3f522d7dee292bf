"""Database roles of OS users: who may read which rows (sql/0004_privacy.sql).

Every OS user who may run `jobio show` gets a LOGIN role of the same name, a member of
`jobio_user`, and a row in `jobio_account` recording their uid: row-level security shows a
role the rows of that uid. The members of the admin Unix group (`privacy.admin_group`,
default `slurmio-admin`) are also members of `jobio_admin` and see every row. Peer
authentication (the embedded server, or `local ... peer` lines on a site server) is what
ties a connection to the OS account of the same name; see docs/privacy.md.

`sync_accounts` needs a superuser or a role with CREATEROLE that owns the schema (`jobio db
users` connects as the superuser of the embedded server). Roles are never dropped here: a
user who left keeps a role that can no longer log in by peer once the OS account is gone.
"""

from __future__ import annotations

import grp
import pwd
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import psycopg
from psycopg import errors, sql

USER_ROLE = "jobio_user"
ADMIN_ROLE = "jobio_admin"
# Connections one user's role may hold at once (`jobio db users --connection-limit`): a
# command takes one, a user's web view (OOD) a few; PostgreSQL's default max_connections is
# 100, so one user can never take the slots of the others or of the project's roles.
USER_CONNECTION_LIMIT = 8
SERVICE_ROLE = "jobio_service"  # may SET ROLE to every user (sql/0017)
COLLECTOR_ROLE = "jobio_collector"
GROUP_ROLES = (USER_ROLE, ADMIN_ROLE, COLLECTOR_ROLE)
DEFAULT_ADMIN_GROUP = "slurmio-admin"
MIN_UID = 1000  # --all-passwd: regular accounts (Debian's UID_MIN)
NOBODY_UIDS = frozenset({65534, 4294967294})  # nobody / nfsnobody
# A name that is a plausible OS account (Debian allows a trailing $ for machine accounts).
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]*\$?")
_NAME_MAX = 63  # NAMEDATALEN - 1
# The roles slurm-io itself creates or tells a site to create: the embedded server's
# superuser and a site's database owner (`slurmio`, store/embedded_setup.py, docs/deploy.md),
# the hook's and report daemon's role (`slurm_hook`), PostgreSQL's own `postgres`, and every
# `jobio_*` / `jobio-*` role (sql/0004, sql/0017; the service's `jobio-svc`). An OS account
# of such a name never gets a user role, and the read service never acts as it: a user role
# is granted to jobio_service, so `jobio db users slurmio` once handed the owner's rights
# (every row) to whoever holds uid `slurmio` (issue 18, finding 5).
PROJECT_ROLES = frozenset({"slurmio", "slurm_hook", "postgres"})
PROJECT_PREFIXES = ("jobio_", "jobio-")
PROJECT_ROLE_REASON = ("a role of slurm-io itself (owner, hook, service, collector or admin): "
                       "never a user role")
PRIVILEGED_ROLE_REASON = ("existing role holds slurm-io's own rights (creates roles, owns the "
                          "data, collects or serves): never a user role")
# What a role holds that must never act for a user, whatever its name (`r` is its pg_roles
# row): creating roles (it could grant itself anything), owning the database or the schema's
# tables (an owner passes row-level security), collecting (the collector policy shows every
# row) or being the service (a member of jobio_service). Superuser and BYPASSRLS are asked
# apart, with their own reason. The ownership test reads one pg_class row (the `job` table),
# not the whole catalogue: the service asks it on every request.
PRIVILEGED_ROLE_SQL = (
    "(r.rolcreaterole"
    " OR r.oid = (SELECT datdba FROM pg_database WHERE datname = current_database())"
    " OR r.oid IS NOT DISTINCT FROM (SELECT relowner FROM pg_class WHERE oid = to_regclass('job'))"
    " OR coalesce(pg_has_role(r.oid, to_regrole('jobio_collector'), 'MEMBER'), false)"
    " OR coalesce(pg_has_role(r.oid, to_regrole('jobio_service'), 'MEMBER'), false))"
)
# The read service's check once it has become a user's role (service/handlers.as_user): the
# uid the database maps to that role, and whether the role may not act for a user at all.
CURRENT_ROLE_CHECK_SQL = (
    "SELECT jobio_current_uid(), r.rolsuper OR r.rolbypassrls OR " + PRIVILEGED_ROLE_SQL
    + " FROM pg_roles r WHERE r.rolname = current_user"
)


@dataclass
class SyncResult:
    """What `sync_accounts` did; every list holds role names."""

    created: list[str] = field(default_factory=list)  # new LOGIN roles
    added: list[str] = field(default_factory=list)  # existing roles made jobio_user members
    mapped: list[str] = field(default_factory=list)  # new or changed uid in jobio_account
    admins_granted: list[str] = field(default_factory=list)
    admins_revoked: list[str] = field(default_factory=list)
    limited: list[str] = field(default_factory=list)  # existing roles given the new limit
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)


def refusal(name: str) -> str | None:
    """Why `name` cannot be a user role (None when it can)."""
    if not name or len(name.encode()) > _NAME_MAX or not _NAME_RE.fullmatch(name):
        return "not a valid account name"
    lowered = name.lower()
    if lowered.startswith("pg_") or lowered.startswith("jobio_") or lowered == "public":
        return "reserved role name"
    if is_project_role(name):
        return PROJECT_ROLE_REASON
    return None


def is_project_role(name: str) -> bool:
    """Whether `name` is one of slurm-io's own roles (PROJECT_ROLES, PROJECT_PREFIXES), or a
    name PostgreSQL reserves: such a role never becomes a user role and the read service
    never acts as it. Case-insensitive, so that no near-twin slips through either."""
    lowered = name.lower()
    return (lowered in PROJECT_ROLES or lowered == "public" or lowered.startswith("pg_")
            or lowered.startswith(PROJECT_PREFIXES))


def sync_accounts(
    conn: psycopg.Connection, users: Iterable[tuple[str, int]], admins: Iterable[str],
    connection_limit: int = USER_CONNECTION_LIMIT,
) -> SyncResult:
    """Give each (name, uid) in `users` a LOGIN role in jobio_user mapped to its uid, and make
    exactly the roles named in `admins` (among those in jobio_account) members of jobio_admin.

    Idempotent; one transaction (committed here unless the caller has one open). An existing
    role of that name is used as it is (only the membership, the mapping and the connection
    limit are added) unless it is a superuser or can bypass RLS, which is refused: mapping a
    uid to such a role would hide nothing and suggests a name clash. Every user role gets
    `CONNECTION LIMIT connection_limit` (-1: none), so that one user's connections never take
    the server's slots from the others (docs/security.md, "Database roles"). `admins` is the
    complete list: jobio_admin is revoked from other mapped roles (someone left the admin
    group). Admin names without a role are skipped; pass them in `users` too (the CLI does).
    """
    result = SyncResult()
    wanted: dict[str, int] = {}
    for name, uid in users:
        reason = refusal(name)
        if reason is None and not 0 <= uid <= 0xFFFFFFFE:
            reason = f"bad uid {uid}"
        if reason is not None:
            result.skipped.append((name, reason))
        else:
            wanted[name] = uid
    admin_names = set(admins)

    with conn.transaction():
        for name, uid in sorted(wanted.items()):
            if not _ensure_role(conn, name, result, connection_limit):
                continue
            _grant_to_service(conn, name)
            row = conn.execute(
                """
                INSERT INTO jobio_account (rolname, uid) VALUES (%s, %s)
                ON CONFLICT (rolname) DO UPDATE SET uid = EXCLUDED.uid, updated_at = now()
                    WHERE jobio_account.uid IS DISTINCT FROM EXCLUDED.uid
                RETURNING 1
                """,
                (name, uid),
            ).fetchone()
            if row is not None:
                result.mapped.append(name)

        mapped_admins = {
            r[0]
            for r in conn.execute(
                """
                SELECT a.rolname FROM jobio_account a
                JOIN pg_roles r ON r.rolname = a.rolname
                JOIN pg_auth_members m ON m.member = r.oid AND m.roleid = %s::regrole
                """,
                (ADMIN_ROLE,),
            ).fetchall()
        }
        for name in sorted(admin_names):
            if name in mapped_admins:
                continue
            reason = refusal(name)
            exists = reason is None and conn.execute(
                "SELECT 1 FROM jobio_account WHERE rolname = %s", (name,)
            ).fetchone()
            if not exists:
                result.skipped.append((name, reason or "admin without a role (not a user)"))
                continue
            conn.execute(
                sql.SQL("GRANT {} TO {}").format(sql.Identifier(ADMIN_ROLE), sql.Identifier(name))
            )
            result.admins_granted.append(name)
        for name in sorted(mapped_admins - admin_names):
            conn.execute(
                sql.SQL("REVOKE {} FROM {}").format(
                    sql.Identifier(ADMIN_ROLE), sql.Identifier(name)
                )
            )
            result.admins_revoked.append(name)
    return result


def _ensure_role(conn: psycopg.Connection, name: str, result: SyncResult,
                 connection_limit: int) -> bool:
    """Create `name` (LOGIN, in jobio_user) or add an existing role to jobio_user; either way
    with `connection_limit`."""
    row = conn.execute(
        "SELECT r.rolsuper OR r.rolbypassrls, pg_has_role(r.oid, %s, 'MEMBER'), "
        + PRIVILEGED_ROLE_SQL + ", r.rolconnlimit FROM pg_roles r WHERE r.rolname = %s",
        (USER_ROLE, name),
    ).fetchone()
    ident = sql.Identifier(name)
    if row is None:
        try:
            with conn.transaction():  # savepoint: a concurrent sync may create it first
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT {} IN ROLE {}").format(
                        ident, sql.Literal(connection_limit), sql.Identifier(USER_ROLE)
                    )
                )
        except (errors.DuplicateObject, errors.UniqueViolation):
            return _ensure_role(conn, name, result, connection_limit)
        result.created.append(name)
        return True
    privileged, member, own, limit = row
    if privileged:
        result.skipped.append((name, "existing role is a superuser or bypasses RLS"))
        return False
    if own:
        result.skipped.append((name, PRIVILEGED_ROLE_REASON))
        return False
    if not member:
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(USER_ROLE), ident))
        result.added.append(name)
    if limit != connection_limit:
        conn.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(
            ident, sql.Literal(connection_limit)))
        result.limited.append(name)
    return True


def _grant_to_service(conn: psycopg.Connection, name: str) -> None:
    """Let the read service become this user (`SET ROLE`, sql/0017_site_service.sql)."""
    row = conn.execute(
        "SELECT CASE WHEN to_regrole(%s) IS NOT NULL THEN NOT pg_has_role(%s, %s, 'MEMBER') "
        "END", (SERVICE_ROLE, SERVICE_ROLE, name)).fetchone()
    if row is not None and row[0]:
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(name),
                                                      sql.Identifier(SERVICE_ROLE)))


# -- the OS side: passwd and group ---------------------------------------------------------


def resolve_users(names: Iterable[str]) -> tuple[list[tuple[str, int]], list[str]]:
    """(name, uid) of each OS account named; the second list holds unknown names."""
    found: list[tuple[str, int]] = []
    unknown: list[str] = []
    for name in names:
        try:
            found.append((name, pwd.getpwnam(name).pw_uid))
        except KeyError:
            unknown.append(name)
    return found, unknown


def passwd_users(min_uid: int = MIN_UID) -> list[tuple[str, int]]:
    """Every passwd entry with uid >= min_uid, nobody excepted (what NSS enumerates: with
    sssd/LDAP that may need `enumerate = true`, or name the users instead)."""
    seen: dict[str, int] = {}
    for entry in pwd.getpwall():
        if entry.pw_uid >= min_uid and entry.pw_uid not in NOBODY_UIDS:
            seen.setdefault(entry.pw_name, entry.pw_uid)
    return sorted(seen.items())


def group_members(group: str) -> list[str] | None:
    """Names of the members of Unix group `group`, including those whose primary group it
    is (they are not listed in gr_mem); None when the group does not exist."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return None
    members = set(entry.gr_mem)
    members.update(p.pw_name for p in pwd.getpwall() if p.pw_gid == entry.gr_gid)
    return sorted(members)
