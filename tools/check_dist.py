"""Checks Ember's sdist and repaired wheel (run by .ci/run).

  python tools/check_dist.py sdist ember-X.tar.gz
  python tools/check_dist.py wheel ember-X-manylinux_2_NN_x86_64.whl AUDITWHEEL_SHOW_JSON

sdist: holds what a build needs (pyproject.toml, CMakeLists.txt, README.md,
the C++ sources, the bindings, the package, tools/gen_stubs.py) and nothing
that is not source: no build folder, no compiled file, no CI script or
benchmark, no file over 1 MB, under 5 MB in all.

wheel: a manylinux tag; the version of pyproject.toml in its name and
metadata; the extension, the type stubs and py.typed, libember.a and the
headers; no OpenBLAS inside (it comes from scipy-openblas32, found through
the extension's relative rpath) and nothing grafted: the extension needs
glibc, libstdc++ and libgcc_s, all in the manylinux policy. `auditwheel
show --json` (AUDITWHEEL_SHOW_JSON) must agree: the tag its symbol versions
allow is the wheel's, the one external library is libscipy_openblas.so
(excluded on purpose, which is why its overall tag reads linux_x86_64), and
no instruction-set extension beyond the policy's.
"""
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MB = 1 << 20


def fail(msg):
    print(f"check_dist: {msg}")
    sys.exit(1)


def pyproject_version():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        text = f.read()
    section = re.search(r"^\[project\]$(.*?)^\[", text, re.S | re.M).group(1)
    return re.search(r'^version\s*=\s*"([^"]+)"', section, re.M).group(1)


def check_sdist(path):
    version = pyproject_version()
    with tarfile.open(path) as tf:
        members = [m for m in tf.getmembers() if m.isfile()]
    prefix = f"ember-{version}/"
    names = {m.name[len(prefix):] for m in members if m.name.startswith(prefix)}
    if len(names) != len(members):
        fail(f"{path}: members outside {prefix}")
    needed = ["pyproject.toml", "CMakeLists.txt", "README.md", "PKG-INFO", "tools/gen_stubs.py",
              "csrc/ember/array.h", "csrc/ember/version.cpp", "python/src/module.cpp", "python/ember/__init__.py",
              "python/ember/__main__.py"]
    missing = [n for n in needed if n not in names]
    if missing:
        fail(f"{path}: missing {missing}")
    bad = sorted(n for n in names if n.startswith(("build/", "dist/", ".ci/", "benchmarks/"))
                 or n.endswith((".so", ".o", ".a", ".pyc", ".whl")) or "/__pycache__/" in n)
    if bad:
        fail(f"{path}: files that are no source: {bad[:10]}")
    big = sorted((m.size, m.name) for m in members if m.size > MB)
    if big:
        fail(f"{path}: files over 1 MB: {big}")
    total = sum(m.size for m in members)
    if total > 5 * MB:
        fail(f"{path}: {total / MB:.1f} MB unpacked (over 5 MB)")
    print(f"check_dist: sdist ok ({len(members)} files, {total / MB:.2f} MB unpacked, "
          f"{os.path.getsize(path) / MB:.2f} MB packed)")


def check_wheel(path, show_output):
    version = pyproject_version()
    name = os.path.basename(path)
    m = re.fullmatch(r"ember-([^-]+)-(cp\d+)-(cp\d+)-(.+)\.whl", name)
    if not m:
        fail(f"{name}: not a wheel name")
    if m.group(1) != version:
        fail(f"{name}: version {m.group(1)}, pyproject.toml says {version}")
    tags = m.group(4).split(".")
    if not any(re.fullmatch(r"manylinux_2_\d+_x86_64", t) for t in tags):
        fail(f"{name}: no manylinux tag ({m.group(4)})")
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        meta = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = zf.read(meta[0]).decode()
        core = [n for n in names if re.fullmatch(r"ember/core\.cpython-[^/]+\.so", n)]
        if len(core) != 1:
            fail(f"{name}: {len(core)} extension modules")
        with tempfile.TemporaryDirectory() as tmp:
            so = zf.extract(core[0], tmp)
            dyn = subprocess.run(["readelf", "-d", so], check=True, capture_output=True, text=True).stdout
    if not re.search(rf"^Version: {re.escape(version)}$", text, re.M):
        fail(f"{name}: METADATA has no 'Version: {version}'")
    needed = ["ember/__init__.py", "ember/__main__.py", "ember/py.typed", "ember/core/__init__.pyi",
              "ember/core/random.pyi", "ember/core/linalg.pyi", "ember/core/fft.pyi", "ember/lib/libember.a",
              "ember/include/ember/array.h", "ember/include/ember/version.h"]
    missing = [n for n in needed if n not in names]
    if missing:
        fail(f"{name}: missing {missing}")
    grafted = sorted(n for n in names if ".libs/" in n or "openblas" in n.lower())
    if grafted:
        fail(f"{name}: libraries inside the wheel: {grafted}")
    libs = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    allowed = re.compile(r"lib(c|m|dl|pthread|rt)\.so\.\d+|ld-linux-x86-64\.so\.2|libscipy_openblas\.so"
                         r"|libstdc\+\+\.so\.6|libgcc_s\.so\.1")
    extra = [lib for lib in libs if not allowed.fullmatch(lib)]
    if extra:
        fail(f"{name}: the extension needs {extra} (only glibc, libstdc++, libgcc_s and OpenBLAS expected)")
    rpath = re.search(r"\((?:RPATH|RUNPATH)\)\s+Library (?:rpath|runpath): \[([^\]]*)\]", dyn)
    if not rpath or "$ORIGIN/../scipy_openblas32/lib" not in rpath.group(1).split(":"):
        fail(f"{name}: the extension's rpath does not reach scipy_openblas32/lib: {rpath and rpath.group(1)}")
    with open(show_output) as f:
        show = json.load(f)
    if show.get("sym_tag") not in tags:
        fail(f"auditwheel show: the symbol versions allow {show.get('sym_tag')}, the wheel has {tags}")
    if set(show.get("external_libs", {})) != {"libscipy_openblas.so"}:
        fail(f"auditwheel show: external libraries {sorted(show.get('external_libs', {}))}, "
             "expected libscipy_openblas.so only")
    if show.get("unsupported_isa"):
        fail("auditwheel show: instructions beyond the policy's instruction-set level")
    to_drop = show.get("policy_upgrades", {}).get(show["sym_tag"], {}).get("libs_to_eliminate", [])
    if sorted(to_drop) != ["libscipy_openblas.so"]:
        fail(f"auditwheel show: {show['sym_tag']} would need {to_drop} removed")
    print(f"check_dist: wheel ok ({name}: {len(names)} files, needs {libs}, rpath {rpath.group(1)}; "
          f"auditwheel: {show['sym_tag']}, external {sorted(show['external_libs'])})")


def main(argv):
    if len(argv) >= 3 and argv[1] == "sdist":
        check_sdist(argv[2])
    elif len(argv) >= 4 and argv[1] == "wheel":
        check_wheel(argv[2], argv[3])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
