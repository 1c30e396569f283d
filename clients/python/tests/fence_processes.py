"""Real processes for the fencing tests: a redis-server with its own data dir (restartable on it),
and a PostgreSQL server from test/support/postgres.sh (restartable on its data dir)."""

import os
import pathlib
import re
import shlex
import signal
import subprocess
import tempfile
import time

import support

DURABLE = ("--appendonly", "yes", "--appendfsync", "always")


def wait_until(predicate, what, timeout_s=support.START_TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


class RedisServer:
    """redis-server on a free port with `args`, its files in a temp dir; kill() is SIGKILL, start() again reuses the dir and port."""

    def __init__(self, *args):
        self._dir = tempfile.TemporaryDirectory(prefix="fence-redis-")
        self.port = support.free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self._args = args
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--dir", self._dir.name, *self._args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def answers():
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}")
            try:
                return support.redis_command(self.url, "PING") == "+PONG"
            except OSError:
                return False
        wait_until(answers, "redis-server to answer PING")
        return self

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self):
        self.kill()
        self._dir.cleanup()


class PostgresServer:
    """PostgreSQL from test/support/postgres.sh; kill() is SIGKILL of the postmaster, start_again() restarts on the same data dir."""

    SCRIPT = support.REPO_ROOT / "test" / "support" / "postgres.sh"

    def __init__(self):
        self._parent = tempfile.mkdtemp(prefix="fence-pg-")
        self.dir = pathlib.Path(self._parent) / "pg"
        out = subprocess.run(["bash", str(self.SCRIPT), "start", str(self.dir)], check=True, capture_output=True, text=True).stdout
        fields = dict(re.findall(r"(\w+)=(\S+)", out))
        self.url, self.pid = fields["PGURL"], int(fields["PGPID"])

    def _pg_ctl(self, *args):
        data = self.dir / "data"
        pg_ctl = pathlib.Path(shlex.split((data / "postmaster.opts").read_text())[0]).with_name("pg_ctl")
        command = [str(pg_ctl), "-D", str(data), *args]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)

    def kill(self):
        """SIGKILL, by PID, of the postmaster and of every server process it started (its backends
        would otherwise answer their connections until they notice the postmaster is gone)."""
        children = pathlib.Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        for pid in [self.pid, *map(int, children)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop_immediately(self):
        """Immediate shutdown (SIGQUIT to every server process, no checkpoint): committed rows must come back from the WAL."""
        self._pg_ctl("stop", "-m", "immediate", "-w")

    def start_again(self):
        """pg_ctl start on the same data dir with the options it last ran with (postmaster.opts)."""
        data = self.dir / "data"
        options = shlex.split((data / "postmaster.opts").read_text())[1:]
        options = [opt for opt in options if opt not in ("-D", str(data))]
        self._pg_ctl("-l", str(self.dir / "server.log"), "-w", "-t", "30", "-o", shlex.join(options), "start")
        self.pid = int((data / "postmaster.pid").read_text().split()[0])

    def stop(self):
        subprocess.run(["bash", str(self.SCRIPT), "stop", str(self.dir)], check=False)
        os.rmdir(self._parent)



def pg_connect(url):
    """A function returning a new psycopg2 connection to `url`."""
    import psycopg2

    return lambda: psycopg2.connect(url)
