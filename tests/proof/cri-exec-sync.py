#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The COMMAND of the CRI proof cells (crio-cells.py): one ExecSync, the
call kubelet makes for an exec probe or a lifecycle hook, through the
project's CRI client (tests/clients/crilib.py), to a CRI-O socket.

Usage: cri-exec-sync.py SOCKET CONTAINER-ID PROGRAM [ARG...]
Exit: the exec's own exit code (its output passed on); 1 with the reason
on stderr when the call itself fails; 2 on usage errors.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients"))
import crilib  # noqa: E402


class Endpoint:
    """What crilib.Cri needs of a daemon: its socket."""

    def __init__(self, address):
        self.address = address


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[4], file=sys.stderr)
        return 2
    cri = crilib.Cri(Endpoint(sys.argv[1]), timeout=60)
    try:
        result = cri.exec_sync(sys.argv[2], sys.argv[3:])
    finally:
        cri.close()
    if result[0] == "error":
        print("cri-exec-sync: ExecSync failed: %s: %s" % result[1:], file=sys.stderr)
        return 1
    code, out, err = result
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code if 0 <= code < 256 else 1


if __name__ == "__main__":
    sys.exit(main())
