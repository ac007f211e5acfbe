#!/usr/bin/env python3
"""Writes the malformed-file table and the fuzz seeds of
tests/python/io_cases.py to a folder for the sanitizer harness
(tests/cpp/io_fuzz.cpp): bad-<id>.<fmt> with its expected message fragment
in bad-<id>.<fmt>.expect, and seed-<k>.<fmt>.

Usage: python tools/io_cases_dump.py OUT_DIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import io_cases  # noqa: E402


def main(out):
    os.makedirs(out, exist_ok=True)
    for cid, fmt, data, frag in io_cases.MALFORMED:
        with open(os.path.join(out, f"bad-{cid}.{fmt}"), "wb") as f:
            f.write(data)
        with open(os.path.join(out, f"bad-{cid}.{fmt}.expect"), "w") as f:
            f.write(frag)
    for fmt, files in io_cases.seeds().items():
        for k, data in enumerate(files):
            with open(os.path.join(out, f"seed-{k}.{fmt}"), "wb") as f:
                f.write(data)
    print(f"{len(io_cases.MALFORMED)} malformed cases and the seeds in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
