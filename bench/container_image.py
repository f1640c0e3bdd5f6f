"""Benchmark: the container image, its size and how long it takes to build (issue 26).

Builds the repository's Dockerfile with podman on the bootstrapped stand-in for python:3.11-slim
(container/bootstrap-base.sh), from a copy of the build context, three times:

* cold: `--no-cache`, every layer (curl from Debian, the ~70 locked wheels from PyPI, the service);
* warm: the same inputs again, every layer from the cache;
* after a code change: one source file changed, so the dependency layers come from the cache and the layers
  from `COPY api` on are built again (a developer's rebuild).

It prints each build's wall time, the CPU the build and the rest of the machine used meanwhile, and the image
size by layer group. `--bootstrap` also times bootstrapping a base from scratch (into a scratch cache and
tag, removed afterwards), which the tests do once per recipe. Cold builds download from PyPI (through the
host's proxy here): their time depends on the network as much as on the machine.

    .venv/bin/python -m bench.container_image                 # cold, warm, code change
    .venv/bin/python -m bench.container_image --bootstrap     # and a fresh base
    .venv/bin/python -m bench.container_image --compressed    # and the gzip size a registry would hold

CONTAINERS_CONF defaults to container/containers.conf (this sandboxed machine kind), as in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from bench.procstats import cpu_count, machine_busy_seconds, mib
from bench.tables import print_table

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP_BASE = REPO_ROOT / "container" / "bootstrap-base.sh"
DOCKERFILE = REPO_ROOT / "Dockerfile"
BENCH_TAG = "localhost/tau2-retail-green-agent:bench"
# Layer groups, by the Dockerfile step that made them (podman history's CreatedBy).
GROUPS = [
    ("base (bootstrapped python:3.11-slim stand-in)", "ADD file:"),
    ("curl (apt-get)", "apt-get install"),
    ("dependencies (requirements.lock)", "pip install --require-hashes"),
    ("the service (sources and its wheel)", "COPY "),
    ("the service (sources and its wheel)", "pip install --no-deps"),
]


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float  # the command and everything it waited for (podman, buildah's RUN steps)
    machine_cpu_s: float  # every process on the machine meanwhile


def podman_env() -> dict[str, str]:
    default = REPO_ROOT / "container" / "containers.conf"
    return {**os.environ, "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(default))}


def measured(command: list[str], env: dict[str, str] | None = None) -> tuple[Measured, str]:
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine_before = machine_busy_seconds()
    started = time.perf_counter()
    done = subprocess.run(command, env=env or podman_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    machine = machine_busy_seconds() - machine_before
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        output = done.stdout[-3000:] + done.stderr[-3000:]
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{output}")
    cpu = (children.ru_utime - children_before.ru_utime) + (children.ru_stime - children_before.ru_stime)
    return Measured(wall, cpu, machine), done.stdout


def podman(*args: str) -> str:
    return subprocess.run(
        ["podman", *args], env=podman_env(), capture_output=True, text=True, check=True
    ).stdout


def context_sources() -> list[str]:
    """What the Dockerfile copies (every COPY source), with the files that steer the build."""
    sources = ["Dockerfile", ".dockerignore"]
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("COPY "):
            sources += line.split()[1:-1]
    return sources


def copy_context(target: Path) -> None:
    for name in context_sources():
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)


def build(context: Path, base: str, built: list[str], *extra: str) -> Measured:
    """One build of `context`; its image id is appended to `built` (removed at the end)."""
    iidfile = context.parent / "iid"
    command = ["podman", "build", "--format", "docker", "--build-arg", f"BASE_IMAGE={base}", *extra]
    result, _ = measured([*command, "--iidfile", str(iidfile), "--tag", BENCH_TAG, str(context)])
    built.append(iidfile.read_text().strip().removeprefix("sha256:"))
    return result


def layer_sizes(image: str) -> list[tuple[str, int]]:
    """Bytes per group of layers, in the Dockerfile's order; steps that add no files are left out."""
    sizes = dict.fromkeys([name for name, _ in GROUPS] + ["other steps"], 0)
    for layer in json.loads(podman("history", "--format", "json", image)):
        group = next((name for name, marker in GROUPS if marker in layer["CreatedBy"]), "other steps")
        sizes[group] += int(layer["size"])
    return [(group, size) for group, size in sizes.items() if size]


def gzip_bytes(image: str) -> int:
    """Bytes of the image's layers gzip-compressed (level 6, as registries store them)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    total = 0
    with subprocess.Popen(
        ["podman", "save", "--format", "docker-archive", image], stdout=subprocess.PIPE, env=podman_env()
    ) as save:
        assert save.stdout is not None
        while chunk := save.stdout.read(1 << 20):
            total += len(compressor.compress(chunk))
    return total + len(compressor.flush())


def bootstrap(scratch: Path) -> tuple[Measured, str]:
    env = {
        **podman_env(),
        "TAU2_CONTAINER_CACHE": str(scratch / "cache"),
        "TAU2_BASE_REPOSITORY": "localhost/tau2-green-base-bench",
    }
    result, out = measured([str(BOOTSTRAP_BASE)], env=env)
    return result, out.strip().splitlines()[-1]


def row(what: str, m: Measured) -> list[str]:
    others = max(0.0, m.machine_cpu_s - m.cpu_s)
    return [what, f"{m.wall_s:.1f}", f"{m.cpu_s:.1f}", f"{others / m.wall_s:.2f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap", action="store_true", help="also time bootstrapping a fresh base")
    parser.add_argument("--compressed", action="store_true", help="also measure the gzip-compressed size")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix="tau2-image-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        if args.bootstrap:
            fresh, fresh_tag = bootstrap(scratch)
            rows.append(row("bootstrap the base (mmdebstrap, import)", fresh))
            podman("rmi", fresh_tag)
        _, base_out = measured([str(BOOTSTRAP_BASE)])  # cached: the tests' base
        base = base_out.strip().splitlines()[-1]
        context = scratch / "context"
        context.mkdir()
        copy_context(context)
        built: list[str] = []
        rows.append(row("cold build (--no-cache)", build(context, base, built, "--no-cache")))
        rows.append(row("warm build (same inputs)", build(context, base, built)))
        with (context / "api" / "__init__.py").open("a") as changed:
            changed.write("# a code change for bench.container_image\n")
        rows.append(row("build after a code change (api/)", build(context, base, built)))

    print_table(
        f"Building the image (podman {podman('version', '--format', '{{.Client.Version}}').strip()}, "
        f"base {base}; {cpu_count()} cores)",
        ["build", "wall s", "build CPU s", "other processes, cores busy"],
        rows,
    )
    total = int(podman("image", "inspect", "--format", "{{.Size}}", BENCH_TAG))
    size_rows = [[group, mib(size)] for group, size in layer_sizes(BENCH_TAG)]
    size_rows.append(["the image (uncompressed, as `podman images` shows)", mib(total)])
    if args.compressed:
        size_rows.append(["the image gzip-compressed (what a registry stores)", mib(gzip_bytes(BENCH_TAG))])
    print_table("Image size", ["layers", "MiB"], size_rows)
    print(
        "build CPU = podman and the build steps it ran (children of this process); other processes = the "
        "rest of the machine's CPU meanwhile, in cores. The cold build downloads the locked wheels from "
        "PyPI; the builds start from the cached base."
    )
    remove_bench_images(built)
    return 0


def remove_bench_images(built: list[str]) -> None:
    """The bench's images and the layers only they use (its cold build made a chain of its own). An image
    that carries another tag (the tests' image, when the inputs were the same) stays: podman's `rmi` of an
    image id removes the image whatever its tags, with every layer no other image uses."""
    for image in dict.fromkeys(reversed(built)):
        (inspected,) = json.loads(podman("image", "inspect", image))
        if set(inspected.get("RepoTags") or []) <= {BENCH_TAG}:
            podman("rmi", image)


if __name__ == "__main__":
    raise SystemExit(main())
