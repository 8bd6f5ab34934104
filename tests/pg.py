"""A throwaway PostgreSQL server for tests: the session fixture ``postgres``.

The server is Debian's ``postgresql`` package (``initdb`` and ``pg_ctl`` on PATH or
under ``/usr/lib/postgresql/<version>/bin``), initialised into a fresh temporary folder,
listening on 127.0.0.1 and a Unix socket in that folder only, with ``trust``
authentication, and removed at the end of the session. PostgreSQL refuses to run as
root, so under root the server runs as the ``postgres`` system user (created when
missing) and the folder is handed to that user. Missing binaries fail the tests: there
is no skip. ``make test`` installs the package when no ``initdb`` can be found.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

SERVER_USER = "postgres"  # the OS user that runs the server when the tests run as root
DB_USER = "postgres"  # the database superuser initdb creates
READY_SECONDS = 60
START_ATTEMPTS = 3


@dataclass(frozen=True)
class Postgres:
    """A running server: where it listens and how to connect to it."""

    host: str
    port: int
    socket_dir: str
    user: str = DB_USER
    dbname: str = "postgres"

    @property
    def dsn(self) -> str:
        """Return a libpq connection string for the server over TCP."""
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        """Open a new psycopg connection (autocommit unless told otherwise)."""
        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.dsn, **kwargs)


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.parent.name))


def find_bindir() -> Path | None:
    """Return the folder holding ``initdb`` and ``pg_ctl``, or None when there is none."""
    candidates = []
    on_path = shutil.which("initdb")
    if on_path is not None:
        candidates.append(Path(on_path).resolve().parent)
    installed = Path("/usr/lib/postgresql").glob("*/bin/initdb")
    candidates += [p.parent for p in sorted(installed, key=_version, reverse=True)]
    for bindir in candidates:
        if all(os.access(bindir / tool, os.X_OK) for tool in ("initdb", "pg_ctl")):
            return bindir
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _server_user() -> pwd.struct_passwd | None:
    """Return the OS user to run the server as, or None to run as ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVER_USER)


def _run(
    cmd: list[str], user: pwd.struct_passwd | None, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in ``cwd``, as ``user`` when given (as ourselves otherwise)."""
    as_user: dict[str, Any] = {}
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    if user is not None:
        as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        env["HOME"] = str(cwd)
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False, **as_user
    )


def _must(done: subprocess.CompletedProcess[str], log: Path | None = None) -> None:
    """Fail the test session when ``done`` failed, with its output (and the server log)."""
    if done.returncode == 0:
        return
    text = log.read_text(errors="replace") if log is not None and log.exists() else ""
    pytest.fail(
        f"{shlex.join(done.args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}\n{text}",
        pytrace=False,
    )


def _accepts(server: Postgres) -> str | None:
    """Return None when the server answers a query, else the connection error."""
    try:
        with server.connect(connect_timeout=2) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as err:
        return str(err)
    return None


def _wait_ready(server: Postgres, log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while (error := _accepts(server)) is not None:
        if time.monotonic() > deadline:
            text = log.read_text(errors="replace") if log.exists() else "(no log)"
            pytest.fail(f"PostgreSQL did not accept connections: {error}\n{text}")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """Start a throwaway PostgreSQL server for the session; stop and delete it after."""
    bindir = find_bindir()
    if bindir is None:
        pytest.fail(
            "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or under "
            "/usr/lib/postgresql/*/bin: install Debian's `postgresql` package "
            "(apt-get install postgresql); `make test` does this when run as root",
            pytrace=False,
        )
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="kanon-pg-"))
    data, sockets, log = root / "data", root / "sock", root / "server.log"
    try:
        sockets.mkdir()
        if user is not None:
            for path in (root, sockets):
                os.chown(path, user.pw_uid, user.pw_gid)
        _must(
            _run(
                [
                    str(bindir / "initdb"),
                    "--pgdata",
                    str(data),
                    "--username",
                    DB_USER,
                    "--auth",
                    "trust",
                    "--encoding",
                    "UTF8",
                    "--no-locale",
                    "--no-sync",
                ],
                user,
                root,
            )
        )
        pg_ctl = str(bindir / "pg_ctl")
        stop = [pg_ctl, "--pgdata", str(data), "--mode", "immediate", "--wait", "stop"]
        for attempt in range(START_ATTEMPTS):
            # The free port can be taken between the probe and the server's bind: retry.
            port = _free_port()
            options = shlex.join(
                [
                    *("-k", str(sockets), "-p", str(port)),
                    *("-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"),
                    *("-c", "full_page_writes=off", "-c", "synchronous_commit=off"),
                ]
            )
            start = [pg_ctl, "--pgdata", str(data), "--log", str(log), "--options", options]
            wait = ["--wait", "--timeout", str(READY_SECONDS)]
            started = _run([*start, *wait, "start"], user, root)
            if started.returncode == 0:
                break
            _run(stop, user, root)  # a postmaster that started but never got ready
            if attempt == START_ATTEMPTS - 1:
                _must(started, log)
        try:
            server = Postgres(host="127.0.0.1", port=port, socket_dir=str(sockets))
            _wait_ready(server, log)
            yield server
        finally:
            _must(_run(stop, user, root), log)
    finally:
        shutil.rmtree(root, ignore_errors=True)
