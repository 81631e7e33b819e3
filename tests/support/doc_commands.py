"""The command blocks of the project's documentation, and a way to run them as a user would.

Every fenced block of shell (```bash) or Python (```python) in README.md, docs/ and the packages'
READMEs says, on the line before its fence, what a reader can do with it here:

    <!-- doc-test: run -->              run as written, in order with the page's other blocks; it
                                        must exit 0. Clauses after a colon, `;`-separated:
    <!-- doc-test: run: needs torch; exits 1 -->   runs only where the module is installed (else
                                        the page is skipped, named), and must exit with that status
    <!-- doc-test: serve -->            each command is a server a user starts in a terminal of its
                                        own; it keeps running while the page's later blocks run
    <!-- doc-test: save: FILE -->       the text says to save the block as FILE (a later block runs it)
    <!-- doc-test: manual: REASON -->   cannot run on a build machine (sudo, docker, a Jetson, a GPU,
                                        a camera, a real AirSim); REASON says which

A page's blocks run in a scratch directory that sees the checkout's files (each top-level entry
linked) and writes its own (`runs/`, `settings.json`, `keys/` ...), with the project's `.venv`
active as the pages ask, and the pages' well-known ports (41451, 5600, 8000 ...) mapped to free
ones so that pages can run side by side. Nothing else of the text is changed. A page whose other
ports cannot move says so once, anywhere in it:

    <!-- doc-test-page: ports 41451; xdist-group djitellopy -->   map only these; run in that group
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.ports import free_base_port

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!--\s*doc-test:\s*(run|serve|save|manual)\s*(?::\s*(.*?))?\s*-->\s*$")
PAGE_MARKER = re.compile(r"<!--\s*doc-test-page:\s*(.*?)\s*-->")
FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})```(?P<lang>[\w-]*)\s*$")
SHELL_LANGS = ("bash", "sh", "shell", "console")
RUNNABLE_LANGS = (*SHELL_LANGS, "python")
# How a line of an unlabelled block gives itself away as a command someone is meant to type.
COMMAND_START = re.compile(r"^\s*(\.venv/bin/|dronecats |bash |python3? |pip |sudo |docker )")
# The well-known ports the pages use; each page gets its own free stand-in for each.
DOC_PORTS = (41451, 41452, 5600, 5610, 5620, 5630, 8000, 8001)
SERVER_READY_S = 60.0


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    mode: str  # run | serve | manual | "" (no marker)
    reason: str

    def clauses(self) -> dict[str, str]:
        """A run block's `needs MODULE ...; exits N` as {"needs": "MODULE ...", "exits": "N"}."""
        return keyed_clauses(self.reason) if self.mode == "run" else {}

    @property
    def needs(self) -> list[str]:
        return self.clauses().get("needs", "").split()

    @property
    def exit_status(self) -> int:
        return int(self.clauses().get("exits", "0"))

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[str]:
        """The block's shell commands, continuation lines joined, comments and blank lines dropped."""
        out: list[str] = []
        pending = ""
        for raw in self.text.splitlines():
            line = pending + raw
            if line.rstrip().endswith("\\"):
                pending = line.rstrip()[:-1] + " "
                continue
            pending = ""
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(line.strip())
        return out


def doc_files() -> list[Path]:
    """README.md, docs/**.md and each package's README.md, as tracked by git."""
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    keep = [p for p in listed if p == "README.md" or p.startswith("docs/") or p.count("/") == 1]
    return [ROOT / p for p in sorted(keep) if not p.startswith(("tests/", "benchmarks/"))]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE_OPEN.match(lines[i])
        if not opened:
            i += 1
            continue
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].strip().startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(prev.strip())
        found.append(
            Block(
                path=path,
                line=start + 1,
                lang=opened["lang"],
                text="\n".join(body),
                mode=marker.group(1) if marker else "",
                reason=(marker.group(2) or "") if marker else "",
            )
        )
    return found


def page_options(path: Path) -> dict[str, str]:
    """The page's `doc-test-page` options: {"ports": "41451 5600", "xdist-group": "djitellopy"}."""
    found = PAGE_MARKER.search(path.read_text())
    return keyed_clauses(found.group(1)) if found else {}


def keyed_clauses(text: str) -> dict[str, str]:
    """A marker's `KEY VALUE ...; KEY VALUE` clauses: {"KEY": "VALUE ...", ...}."""
    pairs = (clause.strip().split(None, 1) for clause in text.split(";") if clause.strip())
    return {pair[0]: (pair[1] if len(pair) > 1 else "") for pair in pairs}


def looks_like_commands(block: Block) -> bool:
    return any(COMMAND_START.match(line) for line in block.text.splitlines())


@dataclass
class PageRun:
    """One page's runnable blocks, run in order in one scratch directory."""

    path: Path
    work_dir: Path
    ports: dict[int, int] = field(default_factory=dict)
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        tracked = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        for top in sorted({p.split("/", 1)[0] for p in tracked} | {".venv"}):
            if (ROOT / top).exists() and not (self.work_dir / top).exists():
                (self.work_dir / top).symlink_to(ROOT / top)
        text = self.path.read_text()
        _require_current_venv()
        named = page_options(self.path).get("ports")
        movable = tuple(int(p) for p in named.replace(",", " ").split()) if named is not None else DOC_PORTS
        self.ports = {p: free_base_port() for p in movable if re.search(rf"\b{p}\b", text)}

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        venv = self.work_dir / ".venv"
        env["VIRTUAL_ENV"] = str(venv)  # `source .venv/bin/activate`, as the pages ask
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["QT_QPA_PLATFORM"] = "offscreen"
        env.pop("DISPLAY", None)  # a build machine has none; the pages say what happens then
        env.pop("PYTHONPATH", None)
        return env

    def mapped(self, text: str) -> str:
        for doc_port, port in self.ports.items():
            text = re.sub(rf"\b{doc_port}\b", str(port), text)
        return text

    def save_block(self, block: Block) -> None:
        (self.work_dir / block.reason).write_text(self.mapped(block.text) + "\n")

    def run_block(self, block: Block, timeout_s: float) -> subprocess.CompletedProcess[str]:
        if block.lang == "python":
            script = self.work_dir / f"doc_snippet_{block.line}.py"
            script.write_text(self.mapped(block.text) + "\n")
            argv = [str(self.work_dir / ".venv" / "bin" / "python"), str(script)]
        else:
            argv = ["bash", "-euo", "pipefail", "-c", self.mapped(block.text)]
        # to a file, not a pipe: a server the block starts with `&` keeps a pipe open after the
        # block's shell has exited, and the block is done when its shell is
        log_path = self.work_dir / f"block_{block.line}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                argv,
                cwd=self.work_dir,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # `cmd &` inside the block stays in this group, stopped at the end
            )
        self.servers.append(proc)  # its group is stopped with the page
        try:
            proc.wait(timeout=timeout_s)
            note = ""
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            note = f"\n[doc-test: still running after {timeout_s:.0f} s: stopped]"
        out = log_path.read_text(errors="replace") + note
        self.transcript.append(f"$ {block.where}\n{out}")
        return subprocess.CompletedProcess(argv, proc.returncode, out, "")

    def start_servers(self, block: Block) -> None:
        for command in block.commands():
            command = self.mapped(command)
            log = open(self.work_dir / f"server_{block.line}_{len(self.servers)}.log", "wb")  # noqa: SIM115
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.work_dir,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.servers.append(proc)
            ports = [p for p in self.ports.values() if re.search(rf"\b{p}\b", command)]
            _wait_listening(proc, ports, command, Path(log.name))

    def close(self) -> None:
        for proc in reversed(self.servers):
            _stop_group(proc)
        for log in sorted(self.work_dir.glob("server_*.log")):
            self.transcript.append(f"[server log {log.name}]\n{log.read_text(errors='replace')[-3000:]}")


def _require_current_venv() -> None:
    """The pages run `scripts/demo.sh`, which installs into .venv when its install stamp is stale; from
    a scratch directory that would point the shared .venv's console scripts into the scratch."""
    want = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes() + (ROOT / "scripts/setup_env.sh").read_bytes()
    )
    stamp = ROOT / ".venv" / ".dronecats-stamp-1"
    if not stamp.is_file() or stamp.read_text().strip() != want.hexdigest()[:16]:
        raise AssertionError(
            "the .venv is older than pyproject.toml or scripts/setup_env.sh: "
            "run `bash scripts/setup_env.sh --dev` (scripts/test.sh does)"
        )


def _wait_listening(proc: subprocess.Popen[bytes], ports: list[int], command: str, log: Path) -> None:
    """Until every mapped port the server's command names accepts a connection (one it connects to
    is up already; one it binds comes up), or the server exits."""
    deadline = time.monotonic() + SERVER_READY_S
    for port in ports:
        while True:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise AssertionError(f"server exited {proc.returncode}: {command}\n{tail}")
            with socket.socket() as sock:
                sock.settimeout(0.5)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"server not listening on {port} after {SERVER_READY_S:.0f} s: {command}"
                )
            time.sleep(0.1)


def _stop_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGTERM to the command's whole process group (a user's Ctrl+C), SIGKILL if it lingers."""
    if proc.poll() is not None and not _group_alive(proc.pid):
        return
    for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _group_alive(proc.pid):
            proc.poll()  # reap the leader, so that a group of one zombie reads as gone
            time.sleep(0.05)
        if not _group_alive(proc.pid):
            return


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
