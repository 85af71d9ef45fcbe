"""Builds the images of loadtest.generate.images into OCI archives and imports them into the local node's containerd.

A build is cached by content: the archive's name carries a hash of everything it is made from (the image's entry,
the Debian package list, each built program's bytes, the requirement files). A Debian root comes from mmdebstrap;
every setup step runs inside the image's root (chroot), never on this machine's own files. Each image is one layer,
or, built on a base image, the base's layers and one layer of what it adds.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Callable

from .. import paths
from ..errors import RunFailed
from ..generate.images import IMAGES, Image
from . import tools

CACHE = paths.CACHE / "images"
SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
SUITE = "bookworm"
# Bumped when the way an archive is made changes, so every cached archive is rebuilt.
BUILDER_VERSION = "1"
# Busybox, for the setup of an image that has no shell of its own; removed again before the layer is made.
SETUP_DIR = "/.loadtest-setup"


class BuildFailed(RunFailed):
    pass


def run(argv: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    argv = [tools.find(argv[0]), *argv[1:]]  # chroot and mmdebstrap live in /usr/sbin, which PATH may lack
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise BuildFailed(f"{what} failed ({result.returncode}): {' '.join(argv[:4])} …\n"
                          f"{(result.stderr or result.stdout)[-2000:]}")
    return result


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def binary(source: str) -> Path:
    """A program an image copies in: built under ~/.cache/loadtest, or installed on this machine."""
    if "/" in source:
        path = paths.CACHE / source
        if not path.exists():
            raise BuildFailed(f"{path} is missing: run scripts/install-node-tools")
        return path
    return Path(tools.find(source))


def dynamic_loader(path: Path) -> str:
    """The ELF interpreter (dynamic loader) a program asks for, empty for a static one."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit ELF only (every built program here)
            return ""
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, p_offset, _, _, p_filesz = struct.unpack("<IIQQQQ", f.read(40))
            if p_type == 3:  # PT_INTERP
                f.seek(p_offset)
                return f.read(p_filesz).rstrip(b"\0").decode()
    return ""


def content_key(image: Image) -> str:
    """The hash of everything the image is built from, its base's key included (read once per process: the
    programs hashed are up to 150 MB)."""
    return _content_key(image.name)


@functools.cache
def _content_key(name: str) -> str:
    image = IMAGES[name]
    digest = hashlib.sha256(f"{BUILDER_VERSION} {SUITE}".encode())
    digest.update(json.dumps(dataclasses.asdict(image), sort_keys=True, default=list).encode())
    for source in sorted(image.binaries.values()):
        digest.update(_file_hash(binary(source)).encode())
    for spec in image.requirements:
        digest.update(spec.encode() + _pins(spec))
    if image.base:
        digest.update(content_key(IMAGES[image.base]).encode())
    return digest.hexdigest()[:16]


def _pins(spec: str) -> bytes:
    """What a requirement spec installs, for the key: a whole FILE's requirement lines (a comment rebuilds no image),
    or of `FILE#PACKAGE` only the lines pinning PACKAGE and what it depends on (nor does a test-only pin)."""
    file, _, package = spec.partition("#")
    text = (paths.HOME / file).read_text()
    if not package:
        return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")).encode()
    closure = _dependencies(package)
    return "\n".join(line for line in text.splitlines() if _name(line) in closure).encode()


def _name(requirement: str) -> str:
    """The canonical project name a requirement line or a `Requires-Dist` entry starts with ("" for a comment)."""
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", found.group(1)).lower() if found else ""


def _dependencies(package: str) -> set[str]:
    """PACKAGE and everything it needs, as installed in this venv (which requirements.txt pins); an extra's own
    dependencies are not installed by `pip install PACKAGE`, so they are left out."""
    found, todo = set(), [_name(package)]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # a dependency of another platform, not installed here
            continue
        todo += [_name(r) for r in requires if "extra ==" not in r.partition(";")[2]]
    return found


def archive_path(image: Image) -> Path:
    return CACHE / f"{image.name}-{content_key(image)}.oci.tar"


def build(names: list[str] | None = None, say: Callable[[str], None] = print) -> None:
    """Build the named images (all by default) and the images they build on, unless cached."""
    for image in _with_bases([IMAGES[n] for n in (names or IMAGES)]):
        archive = archive_path(image)
        if archive.exists():
            say(f"{image.name}: {image.reference} cached ({archive.name})")
        else:
            started = time.monotonic()
            say(f"{image.name}: building {image.reference}…")
            _build(image, archive)
            say(f"{image.name}: built in {time.monotonic() - started:.0f} s, "
                f"{archive.stat().st_size / 2**20:.0f} MiB")


def _with_bases(images: list[Image]) -> list[Image]:
    ordered: list[Image] = []
    for image in images:
        chain = []
        while image:
            chain.append(image)
            image = IMAGES[image.base] if image.base else None
        for i in reversed(chain):
            if i not in ordered:
                ordered.append(i)
    return ordered


def _build(image: Image, archive: Path) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE, prefix=f".build-{image.name}-") as work:
        root = Path(work) / "root"
        base_layers: list[Path] = []
        if image.base:
            base_archive = archive_path(IMAGES[image.base])
            base_layers = _extract_layers(base_archive, Path(work) / "base")
            root.mkdir()
            for layer in base_layers:
                run(["tar", "-xf", str(layer), "-C", str(root), "--numeric-owner"], f"unpack {layer.name}")
        elif image.debian:
            _debian_root(image, root)
        else:
            root.mkdir()
        before = _snapshot(root) if image.base else None
        _install(image, root)
        layer = Path(work) / "layer.tar"
        _make_layer(root, layer, before)
        _write_archive(image, [*base_layers, layer], archive)


def _debian_root(image: Image, root: Path) -> None:
    # Docs and translations are not part of any official image's contract; leaving them out halves the layer.
    excludes = ["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*", "/usr/share/info/*"]
    argv = ["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(image.debian)}",
            *[f"--dpkgopt=path-exclude={e}" for e in excludes], SUITE, str(root)]
    with open(SOURCES) as sources:
        run([*argv, "-"], f"mmdebstrap for {image.name}", stdin=sources)


def _install(image: Image, root: Path) -> None:
    setup = root / SETUP_DIR.lstrip("/")
    setup.mkdir()
    try:
        for target, source in image.binaries.items():
            loader = dynamic_loader(binary(source))
            if loader and not image.debian and not image.base:
                raise BuildFailed(f"{binary(source)} is linked dynamically ({loader}), and {image.reference} has no "
                                  "C library: build it with CGO_ENABLED=0 (scripts/install-node-tools does)")
            dest = root / target.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(binary(source), dest)
        shell = ["/bin/sh"]
        if not (root / "bin" / "sh").exists():
            shutil.copy2(tools.find("busybox"), setup / "busybox")
            shell = [f"{SETUP_DIR}/busybox", "sh"]
            (setup / "bin").mkdir()
            _chroot(root, [f"{SETUP_DIR}/busybox", "--install", "-s", f"{SETUP_DIR}/bin"], "busybox links",
                    path=f"{SETUP_DIR}/bin")
        if image.requirements:
            _pip(image, root, setup)
        if image.setup:
            _chroot(root, [*shell, "-euc", image.setup], f"setup of {image.name}",
                    path=f"{SETUP_DIR}/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    finally:
        shutil.rmtree(setup)


def _chroot(root: Path, argv: list[str], what: str, path: str) -> None:
    # env -i: nothing of this machine's environment leaks into the image's setup.
    run(["chroot", str(root), *argv], what, env={"PATH": path, "HOME": "/root", "LANG": "C.UTF-8"})


def _pip(image: Image, root: Path, setup: Path) -> None:
    """Download the wheels here (the image has no network; pip's cache keeps them), then install them in the
    image's /opt/venv."""
    pip = [str(paths.CACHE / "venv" / "bin" / "pip"), "--disable-pip-version-check", "-q"]
    args: list[str] = []
    for spec in image.requirements:
        file, _, package = spec.partition("#")
        copy = setup / Path(file).name
        shutil.copy(paths.HOME / file, copy)
        # requirements.txt pins the venv's versions: the image's package takes the same ones (a constraint).
        args += ["-c", copy.name, package] if package else ["-r", copy.name]
    run([*pip, "download", "--only-binary=:all:", "-d", "wheels", *args], f"wheels for {image.name}", cwd=setup)
    inside = [f"{SETUP_DIR}/{a}" if a.endswith(".txt") else a for a in args]
    if not (root / "opt" / "venv").exists():
        _chroot(root, ["python3", "-m", "venv", "/opt/venv"], "the venv", path="/usr/bin:/bin")
    _chroot(root, ["/opt/venv/bin/pip", "install", "--disable-pip-version-check", "--no-cache-dir", "-q",
                   "--no-index", "--find-links", f"{SETUP_DIR}/wheels", *inside], f"pip install in {image.name}",
            path="/opt/venv/bin:/usr/bin:/bin")


def _snapshot(root: Path) -> dict[str, tuple[float, int]]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            found[os.path.relpath(path, root)] = (st.st_mtime, st.st_size)
    return found


def _make_layer(root: Path, layer: Path, before: dict[str, tuple[float, int]] | None) -> None:
    """The root as one tar layer, or (on a base) only what changed since `before`."""
    if before is None:
        run(["tar", "-cf", str(layer), "--numeric-owner", "--xattrs", "-C", str(root), "."], "the layer")
        return
    after = _snapshot(root)
    removed = sorted(set(before) - set(after))
    if removed:
        raise BuildFailed(f"building on a base removed {removed[:5]}: layers here only add files")
    changed = sorted(p for p, stat in after.items() if before.get(p) != stat)
    listing = layer.with_suffix(".list")
    listing.write_text("".join(f"./{p}\n" for p in changed))
    run(["tar", "-cf", str(layer), "--numeric-owner", "--xattrs", "--no-recursion", "-C", str(root),
         "-T", str(listing)], "the layer")


def _extract_layers(archive: Path, dest: Path) -> list[Path]:
    """The layer tars of an archive this module wrote, in order."""
    dest.mkdir()
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(tar.extractfile(_blob(index["manifests"][0]["digest"])))
        layers = []
        for i, descriptor in enumerate(manifest["layers"]):
            path = dest / f"{i}.tar"
            with tar.extractfile(_blob(descriptor["digest"])) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            layers.append(path)
    return layers


def _blob(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


def image_config(image: Image, diff_ids: list[str]) -> dict:
    contract = image.contract
    config: dict = {"User": contract.user, "WorkingDir": contract.workdir, "Entrypoint": list(contract.entrypoint),
                    "Env": [f"{k}={v}" for k, v in contract.env] or
                    ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if contract.cmd:
        config["Cmd"] = list(contract.cmd)
    if contract.ports:
        config["ExposedPorts"] = {p: {} for p in contract.ports}
    if contract.stop_signal:
        config["StopSignal"] = contract.stop_signal
    return {"architecture": "amd64", "os": "linux", "config": config,
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": [{"created_by": f"loadtest images build ({image.name})"}]}


def _write_archive(image: Image, layers: list[Path], archive: Path) -> None:
    """An OCI image layout in a tar, named for containerd by the io.containerd.image.name annotation."""
    layer_digests = ["sha256:" + _file_hash(layer) for layer in layers]
    config = json.dumps(image_config(image, layer_digests), sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + hashlib.sha256(config).hexdigest(), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": d, "size": p.stat().st_size}
                   for d, p in zip(layer_digests, layers)],
    }, sort_keys=True).encode()
    index = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": "sha256:" + hashlib.sha256(manifest).hexdigest(), "size": len(manifest),
                       "annotations": {"io.containerd.image.name": image.reference,
                                       "org.opencontainers.image.ref.name": image.reference.rsplit(":", 1)[1]}}],
    }, sort_keys=True).encode()
    partial = archive.with_name(archive.name + ".partial")
    with tarfile.open(partial, "w") as tar:
        def add_bytes(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add_bytes("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add_bytes("index.json", index)
        add_bytes(_blob("sha256:" + hashlib.sha256(manifest).hexdigest()), manifest)
        add_bytes(_blob("sha256:" + hashlib.sha256(config).hexdigest()), config)
        for digest, layer in zip(layer_digests, layers):
            tar.add(layer, arcname=_blob(digest))
    partial.rename(archive)
    for stale in CACHE.glob(f"{image.name}-*.oci.tar"):
        if stale != archive:
            stale.unlink()


def manifest_digest(archive: Path) -> str:
    with tarfile.open(archive) as tar:
        return json.load(tar.extractfile("index.json"))["manifests"][0]["digest"]


def read_config(archive: Path) -> dict:
    """The image config of an archive (the node layer checks it against the image's contract)."""
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(tar.extractfile(_blob(index["manifests"][0]["digest"])))
        return json.load(tar.extractfile(_blob(manifest["config"]["digest"])))
