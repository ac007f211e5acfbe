"""Checks that a dispatch build of Ember runs on a baseline x86-64 CPU.

Ember compiles its hot kernel units once per ISA level, each in its own
namespace (ember::cpu::v2/v3/v4, see csrc/ember/backend/cpu/isa.h), and calls
the level the CPU has. An instruction above the baseline (SSE4.2) anywhere
else would be reached on every CPU, and a SIGILL on one without AVX. This
script disassembles the build and fails when

  * an object of libember.a compiled for the baseline, or of the Python
    bindings, uses an AVX/AVX-512 instruction (any VEX/EVEX-encoded
    instruction: the mnemonic starts with "v", or an ymm/zmm/mask register
    appears);
  * an object file of the AVX2 or AVX-512 compilations defines a global or
    weak function outside its level's namespace that uses one (the linker
    keeps one copy of a weak function: if it kept this one, baseline code
    would call AVX code) — a header included after the level's
    `#pragma GCC target`, say.

Usage: python tests/check_isa_symbols.py BUILD_DIR
(BUILD_DIR is the CMake build folder holding libember.a: build/dev, or
build/<wheel tag> after pip install). Needs binutils (objdump, nm).
"""

import glob
import os
import re
import subprocess
import sys

AVX_REG = re.compile(r"%(ymm|zmm)\d+|%k[0-7]\b")
LEVEL_NS = ("ember::cpu::v3::", "ember::cpu::v4::")


def _members(text, header):
    """Split objdump/nm output of an archive (or one file) into members."""
    members, cur = [], None
    for line in text.splitlines():
        m = header.match(line)
        if m:
            cur = [m.group(1), []]
            members.append(cur)
        elif cur is not None:
            cur[1].append(line)
    return members


def functions(path):
    """[(member, {demangled function name: [instructions]})] of a binary or archive."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", "-w", path],
                         check=True, capture_output=True, text=True).stdout
    result = []
    for member, lines in _members(out, re.compile(r"^(\S+):\s+file format")):
        funcs, cur = {}, None
        for line in lines:
            m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
            if m:
                cur = m.group(1)
                funcs.setdefault(cur, [])
                continue
            if cur is None:
                continue
            parts = line.split("\t")
            if len(parts) >= 2 and re.match(r"^\s*[0-9a-f]+:$", parts[0]):
                funcs[cur].append(parts[1].strip())
        result.append((member, funcs))
    return result


def uses_avx(insns):
    for ins in insns:
        mnemonic = ins.split()[0] if ins.split() else ""
        if mnemonic.startswith("v") and mnemonic not in ("verr", "verw"):
            return ins
        if AVX_REG.search(ins):
            return ins
    return None


def in_level_ns(name):
    return any(ns in name for ns in LEVEL_NS)


def exported_functions(path):
    """[set of demangled global/weak functions] per member of an archive, in order."""
    out = subprocess.run(["nm", "--defined-only", "-C", path], check=True,
                         capture_output=True, text=True).stdout
    result = []
    for _, lines in _members(out, re.compile(r"^(\S+\.o):$")):
        names = set()
        for line in lines:
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in ("T", "W", "i"):
                names.add(parts[2])
        result.append(names)
    return result


def level_of(funcs):
    names = " ".join(funcs)
    return 4 if "ember::cpu::v4::" in names else 3 if "ember::cpu::v3::" in names else 2


def short(name, n=160):
    return name if len(name) <= n else name[:n] + "..."


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    build = argv[1]
    lib = os.path.join(build, "libember.a")
    if not os.path.exists(lib):
        print(f"check_isa_symbols: no {lib}")
        return 2
    problems = []
    members = functions(lib)
    exported = exported_functions(lib)
    if len(exported) != len(members):
        print("check_isa_symbols: could not match nm's members with objdump's")
        return 2
    levels = [level_of(f) for _, f in members]
    if 3 not in levels or 4 not in levels:
        print(f"check_isa_symbols: {lib} has no AVX2/AVX-512 kernel objects (an EMBER_NATIVE build?)")
        return 1
    for (member, funcs), names, level in zip(members, exported, levels):
        for name, insns in funcs.items():
            if level == 2:  # baseline objects (including the v2 compilation): no AVX at all
                bad = uses_avx(insns)
                if bad:
                    problems.append(f"{member}: baseline function {short(name)} uses `{bad}`")
            elif name in names and not in_level_ns(name):
                # weak or global functions of an AVX object outside its namespace stay baseline
                bad = uses_avx(insns)
                if bad:
                    problems.append(f"{member} (v{level}): shared function {short(name)} uses `{bad}`")
    # The bindings (compiled into the extension module, which is stripped, so
    # it is checked through its objects): baseline only.
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "src")
    bind = [os.path.join(build, "CMakeFiles", "core.dir", "python", "src", os.path.basename(c) + ".o")
            for c in sorted(glob.glob(os.path.join(src, "*.cpp")))]
    bind = [b for b in bind if os.path.exists(b)]
    for obj in bind:
        for _, funcs in functions(obj):
            for name, insns in funcs.items():
                bad = uses_avx(insns)
                if bad:
                    problems.append(f"{os.path.basename(obj)}: binding function {short(name)} uses `{bad}`")
    if problems:
        print("check_isa_symbols: instructions above the baseline outside the dispatched kernels:")
        for p in problems[:50]:
            print("  " + p)
        if len(problems) > 50:
            print(f"  ... and {len(problems) - 50} more")
        return 1
    print(f"check_isa_symbols: ok ({len(members)} objects of libember.a: "
          f"{levels.count(2)} baseline, {levels.count(3)} AVX2, {levels.count(4)} AVX-512; "
          f"{len(bind)} binding objects baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
