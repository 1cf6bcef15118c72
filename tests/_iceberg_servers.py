"""Real servers for the Iceberg fleet tests, on loopback: an S3 server (moto's, as its own
process) and a PostgreSQL cluster (Debian's binaries, initdb'd in a fresh directory).

A server that cannot be had skips the test with the reason, except under CI=true, where
.ci/run installs PostgreSQL and the dev extra installs moto: there it fails the test.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: Credentials of the loopback servers' (moto accepts any; these are what it is told).
ACCESS_KEY = "evolog-test-key"
SECRET_KEY = "evolog-test-secret-not-real"


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: .ci/run and the dev extra must provide it)")
    pytest.skip(reason)


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]

    def env(self, **extra: str) -> dict[str, str]:
        """An environment for a child process that reaches this server (and no other
        AWS configuration of the machine's)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            AWS_ACCESS_KEY_ID=ACCESS_KEY,
            AWS_SECRET_ACCESS_KEY=SECRET_KEY,
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_REGION="us-east-1",
            AWS_EC2_METADATA_DISABLED="true",
            AWS_CONFIG_FILE=os.devnull,
            AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        )
        env.update(extra)
        return env

    def client(self) -> object:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def new_bucket(self) -> str:
        name = f"evolog-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)  # type: ignore[attr-defined]
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        client = self.client()
        out: list[str] = []
        token: dict[str, str] = {}
        while True:
            page = client.list_objects_v2(Bucket=bucket, Prefix=prefix, **token)  # type: ignore[attr-defined]
            out.extend(o["Key"] for o in page.get("Contents", []))
            if not page.get("IsTruncated"):
                return out
            token = {"ContinuationToken": page["NextContinuationToken"]}


_LOOPBACK = ("-H", "127.0.0.1", "-p", "0")  # a port the OS picks


@contextlib.contextmanager
def s3_server(**env: str) -> Iterator[S3Server]:
    """moto's S3 server on a port the OS picks, for the duration of the block."""
    try:
        import moto.server  # noqa: F401
    except ImportError:
        unavailable("moto[server] is not installed (pip install 'moto[server]')")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from moto.server import main; main()",
            "-H",
            "127.0.0.1",
            "-p",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    try:
        endpoint = _announced(proc)
        yield S3Server(endpoint, proc)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


def _announced(proc: subprocess.Popen[bytes]) -> str:
    """The URL moto's server prints once it listens."""
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
        m = re.search(rb"Running on (http://127\.0\.0\.1:\d+)", line)
        if m:
            # The rest of its log goes nowhere (a full pipe would block the server).
            threading_drain(proc)
            return m[1].decode()
    raise AssertionError(f"moto's server did not start: {seen.decode(errors='replace')}")


def threading_drain(proc: subprocess.Popen[bytes]) -> None:
    import threading

    stream = proc.stderr
    assert stream is not None
    threading.Thread(target=lambda: all(stream), daemon=True).start()


def free_port() -> int:
    """A port free on loopback now (PostgreSQL cannot be told to pick one itself)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_bin() -> str | None:
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(os.path.realpath(found))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(versions[-1]) if versions else None


@dataclass(frozen=True)
class Postgres:
    port: int

    def uri(self, database: str = "postgres") -> str:
        return f"postgresql://evolog@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh database's URI (each test its own catalog)."""
        import psycopg

        name = f"evolog_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.uri(), autocommit=True) as con:
            con.execute(f"CREATE DATABASE {name}")
        return self.uri(name)


_INITDB = ("-A", "trust", "-U", "evolog", "-E", "UTF8", "--no-sync")


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL cluster of its own, on a free loopback port, for the block.

    PostgreSQL refuses to run as root: as root the cluster runs as the ``postgres`` user
    (Debian's package creates it), in a directory that user owns.
    """
    bindir = _pg_bin()
    if bindir is None:
        unavailable("PostgreSQL is not installed (apt-get install postgresql)")
    assert bindir is not None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        unavailable("psycopg is not installed (pip install 'evolog[iceberg]')")
    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="evolog-pg-"))
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            unavailable("running as root and there is no 'postgres' user to run PostgreSQL as")
        os.chown(base, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data = base / "data"
    try:
        subprocess.run(
            [
                *prefix,
                f"{bindir}/initdb",
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "evolog",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        port = _start(prefix, bindir, base, data)
        try:
            yield Postgres(port)
        finally:
            subprocess.run(
                [*prefix, f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
                check=False,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _start(prefix: list[str], bindir: str, base: Path, data: Path) -> int:
    last = b""
    for _ in range(5):  # another process may take the free port first
        port = free_port()
        opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {base} -c fsync=off"
        done = subprocess.run(
            [
                *prefix,
                f"{bindir}/pg_ctl",
                "-D",
                str(data),
                "-o",
                opts,
                "-l",
                f"{base}/log",
                "-w",
                "-t",
                "60",
                "start",
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
        if done.returncode == 0:
            return port
        last = done.stdout + done.stderr
    log = (base / "log").read_text(errors="replace") if (base / "log").exists() else ""
    raise AssertionError(f"PostgreSQL did not start: {last.decode(errors='replace')} {log}")
