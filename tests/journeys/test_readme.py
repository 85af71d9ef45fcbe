"""The README and the docs as a newcomer types them, on a machine set up by the README's first command alone.

The shell blocks are read from README.md and docs/*.md themselves (in DOCS' order: the README's sections, then each
topic in the order the README links them, then CONTRIBUTING.md), so the docs cannot drift from what is tested. They
run in order in one shell session (what a block exports, the next one has), from a copy of the checkout, with a fresh
${XDG_CACHE_HOME}: `scripts/local` sets that machine up as it would on a fresh one (apt finds its packages present,
the venv and helm are built anew). Only two caches are the machine's, for speed: pip's (downloads and the wheels it
built) and Go's (module downloads, GOMODCACHE, and compiled packages, GOCACHE). So every step of `scripts/local`
still runs, `python3 -m venv`, `pip install`, `go install helm`, but pip installs from wheels and the Go compiler
finds helm's objects, leaving only the link (seconds, not the 2 min of a cold build). Every program the full
`scripts/setup` installs beyond that (HAProxy, Prometheus, the cluster binaries, the browser, ...) is hidden in a
private mount namespace, so a command that needs one must say so.

Each command either works (exit 0; a judged run may also say 3, generator-bound), or exits 2 with one line naming
the set-up step it needs, and the README names that step in the paragraph above its block. The block that tries the
chart on this machine (`loadtest cluster up --real-node`) runs as typed too, with the set-up it names (scripts/setup,
scripts/install-node-tools: the suite's own cache, nothing hidden), in a shell of its own and a test of its own, beside
the newcomer's: a real node, helm install, helm test, a judged run, cluster down. Commands that need an EKS cluster,
a container engine or the suite itself are listed, not run.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = (README, *(REPO / "docs" / f"{topic}.md" for topic in (
    "cluster", "scenarios", "sizing", "ci", "history", "open-model", "regions", "security", "own-test", "faults")),
        REPO / "CONTRIBUTING.md")
FRONT_PAGE_LINES = 250
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
# What the full scripts/setup installs beyond `scripts/setup --local`: hidden from the newcomer's machine.
HIDDEN = ("haproxy", "wrk", "prometheus", "prometheus-node-exporter", "etcd", "containerd", "runc", "chromium",
          "chromedriver", "kubectl", "kube-apiserver", "kwok", "promtool", "docker-registry")
SET_UP_STEP = re.compile(r"scripts/(setup|install-node-tools)\b")
COMMAND_TIMEOUT_S = 420
REAL_NODE = "loadtest cluster up --real-node"
NETNS = Path("/run/netns")
JUDGED_RUN = re.compile(r"^(loadtest run|loadtest local|scripts/local)\b")

# How a command's first words say what it needs. Checked in this order; a command none matches runs.
NEEDS = (
    ("the test suite itself", re.compile(r"^scripts/test\b")),
    ("a container engine", re.compile(r"^docker\b")),
    ("an AWS account", re.compile(r"^eksctl\b")),
    ("a Kubernetes cluster", re.compile(r"^(helm|kubectl)\b|^loadtest (sweep|run|tune|history) --release\b|^loadtest cluster\b"
                                        r"|^scripts/install-node-tools\b|^export KUBECONFIG=|pipeline\.sh (cluster|"
                                        r"release)\b|^ls sweep-report")),
)


@dataclass
class Command:
    text: str
    file: str  # README.md, docs/ci.md, ...
    line: int
    section: str
    before: str  # the paragraph above its block
    block: str  # the whole block it stands in

    @property
    def on_the_real_node(self) -> bool:
        """In the block that sets up the one-node cluster: it runs, with the full set-up its comments name."""
        return REAL_NODE in self.block

    @property
    def needs(self) -> str | None:
        words = re.sub(r"^(\w+=\S+ )+", "", self.text)  # FOO=bar cmd ...: the command is cmd
        return next((what for what, pattern in NEEDS if pattern.search(words)), None)


def commands(readme: str, file: str = "README.md") -> list[Command]:
    """A Markdown file's ```sh blocks, split into commands (continuation lines joined; comments and transcripts
    out)."""
    found, section, lines = [], "", readme.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            section = lines[i].lstrip("# ")
        if lines[i].strip() == "```sh":
            before = "\n".join(lines[max(0, i - 8):i])
            end = lines.index("```", i + 1)
            block = "\n".join(lines[i + 1:end])
            if any(line.startswith("$ ") for line in lines[i + 1:end]):  # a transcript: commands and their output
                i = end + 1
                continue
            i += 1
            pending, start = "", None
            while lines[i].strip() != "```":
                line = lines[i]
                if pending == "" and not line.strip():
                    pass
                elif not line.lstrip().startswith("#") or pending:
                    start = start or i + 1
                    pending += line.rstrip("\\").rstrip() + " " if line.rstrip().endswith("\\") else line
                    if not line.rstrip().endswith("\\"):
                        found.append(Command(pending.strip(), file, start, section, before, block))
                        pending, start = "", None
                i += 1
        i += 1
    return found


def documented_commands() -> list[Command]:
    return [c for doc in DOCS for c in commands(doc.read_text(), str(doc.relative_to(REPO)))]


def test_every_block_of_the_readme_and_the_docs_is_read():
    found = documented_commands()
    assert sum(doc.read_text().count("```sh") for doc in DOCS) >= 15 and len(found) >= 40, len(found)
    assert next(c for c in found if not c.needs).text.startswith("scripts/local"), "the first command run sets up"
    assert len(README.read_text().splitlines()) <= FRONT_PAGE_LINES, "the front page links out: move a topic to docs/"
    assert set((REPO / "docs").glob("*.md")) <= set(DOCS), "a doc the journeys do not read: add it to DOCS"


def shell(state: Path, env: dict, mounts: str = ""):
    """run(text): one command in the session whose exports and folder `state` keeps, in a private mount namespace
    where `mounts` hide what the machine must not have."""
    def run(text: str) -> subprocess.CompletedProcess:
        script = (f"set -e\n{mounts}set +e\nsource {shlex.quote(str(state))}\n{text}\ncode=$?\n"
                  f"{{ export -p; echo cd $(printf %q \"$PWD\"); }} > {shlex.quote(str(state))}\nexit $code\n")
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
                              env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    return run


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """A copy of the checkout and two shells there: the newcomer's (a fresh cache, the extra tools hidden) and one
    with the full set-up (the suite's cache and tools) for the real-node block. Whatever happens, the real node the
    block may have started is brought down, by the session that ran it."""
    root = tmp_path_factory.mktemp("newcomer")
    home = root / "loadtest"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split("\n")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file() or source.is_symlink():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, home / name, follow_symlinks=False)
    hide = [shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin") for tool in HIDDEN]
    for state in ("newcomer.env", "set-up.env"):
        (root / state).write_text(f"cd {shlex.quote(str(home))}\n")
    system = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
    env = {"HOME": os.environ["HOME"], "PATH": system, "LANG": "C.UTF-8", "XDG_CACHE_HOME": str(root / "cache"),
           # pip's and Go's caches (downloads, built wheels, compiled packages): the venv, helm and the calibration
           # are the fresh cache's, made by its scripts/local.
           "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(CACHE / "pip")), "GOFLAGS": "-modcacherw",
           "CI": "true"}
    if shutil.which("go"):
        env["PATH"] += ":" + str(Path(shutil.which("go")).parent)
        # The folders the suite's own set-up used, as the go command finds them (GOPATH or GOMODCACHE, XDG_CACHE_HOME
        # or GOCACHE): compiled objects are keyed by their sources' paths, so helm's are found only beside the same
        # module cache (with GOPATH elsewhere and ~/go/pkg/mod assumed, helm was compiled anew, under the suite's
        # first phase: scripts/local ran past its 420 s).
        for name in ("GOMODCACHE", "GOCACHE"):
            env[name] = subprocess.run(["go", "env", name], capture_output=True, text=True, check=True).stdout.strip()
    mounts = "".join(f"mount --bind /dev/null {shlex.quote(p)}\n" for p in hide if p)
    go_bin = Path.home() / "go" / "bin"
    if go_bin.is_dir():  # tools `go install`ed before: a fresh machine has none
        mounts += f"mount -t tmpfs tmpfs {shlex.quote(str(go_bin))}\n"
    set_up = {**{k: v for k, v in env.items() if k != "XDG_CACHE_HOME"},
              "PATH": f"{CACHE / 'loadtest' / 'bin'}:{env['PATH']}"}  # Go too: install-node-tools builds with it
    if "XDG_CACHE_HOME" in os.environ:
        set_up["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
    full, used = shell(root / "set-up.env", set_up), []

    def set_up_shell(text: str) -> subprocess.CompletedProcess:
        used.append(text)
        return full(text)

    yield {"newcomer": shell(root / "newcomer.env", env, mounts), "set-up": set_up_shell}
    if used:  # only the session that ran the real-node block brings it down: the other's may run beside it
        full("loadtest cluster down >/dev/null 2>&1 || true")


# The newcomer's shell and the real node's: neither reads what the other set, so each is a test of its own, and the
# layer runs the two side by side (tests/layers.py), each in its own session with its own copy of the machine.
SHELLS = {"newcomer": False, "set-up": True}  # shell: whether it runs the real-node block's commands


def network_namespaces() -> set[str]:
    """This machine's named network namespaces (`ip netns`'s): the real node's pods each have one while they run."""
    return set(os.listdir(NETNS)) if NETNS.is_dir() else set()


@pytest.mark.parametrize("shell", SHELLS)
def test_the_readme_works_as_typed_on_a_machine_set_up_by_its_first_command(machine, shell):
    ran, not_here, netns_before = [], [], network_namespaces()
    for command in documented_commands():
        if command.on_the_real_node != SHELLS[shell]:
            continue
        if command.needs and not command.on_the_real_node:
            not_here.append(command)
            continue
        started = time.monotonic()
        result = machine[shell](command.text)
        took = time.monotonic() - started
        out = result.stdout + result.stderr
        shown = f"{command.file} line {command.line}: {command.text}\nexit {result.returncode}\n{out[-3000:]}"
        assert "Traceback" not in out, shown
        if result.returncode == 3 and JUDGED_RUN.match(command.text):
            pass  # generator-bound: the verdict says so, and the run is kept; a 2-core machine may well be
        elif result.returncode != 0:
            assert result.returncode == 2, shown
            errors = [line for line in result.stderr.splitlines() if "error" in line or "not found" in line]
            steps = {m.group(0) for line in errors for m in SET_UP_STEP.finditer(line)}
            assert len(errors) == 1 and steps, f"a refusal must be one line naming its set-up step\n{shown}"
            assert all(step in command.before for step in steps), \
                f"{command.file} does not name {steps} above its block\n{shown}"
        ran.append((command, result.returncode))
        print(f"{command.file}:{command.line:<4d}  exit {result.returncode}  {took:5.0f} s  {command.text[:100]}")
    for command in not_here:
        print(f"{command.file}:{command.line:<4d}  needs {command.needs}: not run here  {command.text[:80]}")
    if SHELLS[shell]:
        assert len(ran) >= 8, f"the real-node block did not run: {[c.text for c, _ in ran]}"
        # The block ends with `loadtest cluster down`, which says it stops every pod: their namespaces go too.
        left = network_namespaces() - netns_before
        assert not left, f"{len(left)} network namespace(s) of the real node's pods left: {sorted(left)[:3]}"
    else:
        # Worked: exit 0, or 3 where a judged run found the generator the limit (as above); refused for a set-up
        # step: 2.
        assert len(ran) >= 20 and sum(code != 2 for _, code in ran) >= 18, [(c.text, code) for c, code in ran]
