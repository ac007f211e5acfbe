"""Compare two builds of Ember in one process (A/B timing of a kernel change).

On a shared VM the speed of a process drifts by tens of percent from one
run to the next (memory placement, a neighbour's load), which hides the few
percent a kernel change is worth when two builds are timed in separate
processes. This tool loads a snapshot of one build as the package `emberb`
beside the working tree's `ember` in one Python process and alternates
between them, so both see the same machine state.

    # 1. build the baseline (say, main) and snapshot it (the first snapshot
    #    compiles the binding objects: minutes; take the build lock)
    flock /tmp/ember-build.lock nice ninja -C build/dev -j2
    flock /tmp/ember-build.lock python tools/ab_build.py snapshot base
    # 2. make the change, rebuild build/dev, then time both:
    python tools/ab_build.py time base \\
        --setup "x = mx.array(np.random.rand(256, 256).astype(np.float32))" \\
        --stmt "mx.eval(x @ x)" [--isa avx2] [--rounds 10] [--number 20]

`snapshot NAME` links build/dev's libember.a (as it is now) into
build/ab/NAME/emberb/core*.so, with a copy of python/ember whose imports
say `emberb`. The binding objects of that extension are compiled once (into
build/ab/obj) with their own pybind11 internals id (PYBIND11_STDLIB), so the
two extensions register their types apart. `time NAME` runs `--setup` once
per build (with `mx` naming the build's `core` module and `np` NumPy), then
`--stmt` `--number` times a round, rounds alternating, and prints each
build's best, first-quartile and median time; `--isa` caps both builds' kernels at a
level (`_set_cpu_isa`). A is the working tree (python/ember, linked to the
current build), B the snapshot.
"""

import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTERNALS = '-DPYBIND11_STDLIB="_emberb"'


def binding_commands(build):
    """The compile commands of the extension's binding objects, from ninja."""
    so = [f for f in os.listdir(build) if f.startswith("core.") and f.endswith(".so")]
    if not so:
        sys.exit(f"no core*.so in {build}: build it first")
    out = subprocess.run(["ninja", "-C", build, "-t", "commands", so[0]], check=True,
                         capture_output=True, text=True).stdout
    compiles, link = [], None
    for line in out.splitlines():
        if " -c " in line and "/python/src/" in line:
            compiles.append(line)
        elif " -shared " in line:
            link = line
    if not compiles or link is None:
        sys.exit("could not read the extension's build commands from ninja")
    return compiles, link


def snapshot(args):
    build = os.path.join(ROOT, args.build)
    objdir = os.path.join(ROOT, "build", "ab", "obj")
    os.makedirs(objdir, exist_ok=True)
    compiles, link = binding_commands(build)
    objs, jobs = [], []
    for cmd in compiles:
        words = shlex.split(cmd)
        src = words[words.index("-c") + 1]
        obj = os.path.join(objdir, os.path.basename(src) + ".o")
        objs.append(obj)
        if os.path.exists(obj) and os.path.getmtime(obj) >= os.path.getmtime(src):
            continue
        # the same flags, another output and internals id (no dependency file)
        o = words.index("-o")
        words[o + 1] = obj
        words = [w for i, w in enumerate(words)
                 if w not in ("-MD", "-MT", "-MF") and words[i - 1] not in ("-MT", "-MF")]
        words.insert(1 if words[0] != "ccache" else 2, INTERNALS)
        jobs.append((os.path.basename(src), words))

    def run(job):
        print("compiling", job[0], file=sys.stderr)
        subprocess.run(job[1], check=True, cwd=build)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(run, jobs))
    dest = os.path.join(ROOT, "build", "ab", args.name)
    shutil.rmtree(dest, ignore_errors=True)
    pkg = os.path.join(dest, "emberb")
    shutil.copytree(os.path.join(ROOT, "python", "ember"), pkg, symlinks=False,
                    ignore=shutil.ignore_patterns("core*.so", "__pycache__"))
    for dirpath, _, files in os.walk(pkg):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(dirpath, f)
                with open(p) as fh:
                    text = fh.read()
                with open(p, "w") as fh:
                    fh.write(re.sub(r"\bember\b", "emberb", text))
    # the extension's link line, with the renamed objects and output
    words = shlex.split(link.split("&&")[1] if link.startswith(":") else link)
    so = os.path.basename(words[words.index("-o") + 1])
    keep = [w for w in words if "/python/src/" not in w]
    o = keep.index("-o")
    keep[o + 1] = os.path.join(pkg, so)
    subprocess.run(keep[:o + 2] + objs + keep[o + 2:], check=True, cwd=build)
    print(f"snapshot {args.name}: {pkg}", file=sys.stderr)


def timing(args):
    dest = os.path.join(ROOT, "build", "ab", args.name)
    if not os.path.isdir(os.path.join(dest, "emberb")):
        sys.exit(f"no snapshot {args.name}: run `snapshot {args.name}` first")
    sys.path[:0] = [os.path.join(ROOT, "python"), dest]
    import numpy as np
    import ember.core as a
    import emberb.core as b
    runs = {}
    for label, m in (("A (working tree)", a), (f"B ({args.name})", b)):
        if args.isa:
            m._set_cpu_isa(args.isa)
        env = {"mx": m, "np": np}
        exec(args.setup, env)
        code = compile(args.stmt, "<stmt>", "exec")
        runs[label] = (m, env, code)
    times = {k: [] for k in runs}
    for _ in range(args.rounds):
        for label, (m, env, code) in runs.items():
            exec(code, env)  # warm: the other build ran last
            for _ in range(args.number):
                t = time.perf_counter()
                exec(code, env)
                times[label].append(time.perf_counter() - t)
    for label, ts in times.items():
        ts.sort()
        print(f"{label:24s} best {ts[0] * 1e3:9.4f} ms  q1 {ts[len(ts) // 4] * 1e3:9.4f} ms  "
              f"median {statistics.median(ts) * 1e3:9.4f} ms  ({len(ts)} runs)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot", help="snapshot the current build as package emberb")
    s.add_argument("name")
    s.add_argument("--build", default="build/dev", help="the CMake/ninja build folder (default build/dev)")
    t = sub.add_parser("time", help="time a statement under the working tree's build and a snapshot")
    t.add_argument("name")
    t.add_argument("--setup", default="")
    t.add_argument("--stmt", required=True)
    t.add_argument("--rounds", type=int, default=10)
    t.add_argument("--number", type=int, default=10, help="timed runs per round")
    t.add_argument("--isa", choices=("baseline", "avx2", "avx512"))
    args = p.parse_args()
    snapshot(args) if args.cmd == "snapshot" else timing(args)


if __name__ == "__main__":
    main()
