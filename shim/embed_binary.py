#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a C header holding a binary file as a byte array (the trampoline
image the shim copies into a memfd on every emulated exec)."""
import sys

def main() -> int:
    source, header, symbol = sys.argv[1:4]
    data = open(source, "rb").read()
    lines = [", ".join(str(b) for b in data[i:i + 24]) for i in range(0, len(data), 24)]
    with open(header, "w") as out:
        out.write("/* SPDX-License-Identifier: LGPL-2.1-or-later */\n")
        out.write(f"/* Generated from {source.rsplit('/', 1)[-1]}; do not edit. */\n")
        out.write("#pragma once\n")
        out.write(f"static const unsigned char {symbol}[{len(data)}] = {{\n  ")
        out.write(",\n  ".join(lines))
        out.write("\n};\n")
    return 0

if __name__ == "__main__":
    sys.exit(main())
