#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The exec's options as each runtime reads them, through execaff-shim
(issue 27 section 1, spec/runtime-options.md).

In a container annotated `first` on cpuset 0-1:

* ``exec --pidfd-socket S ID grep Cpus_allowed_list /proc/self/status``
  in both forms.  runc >= 1.2 takes S as the option's value (a listener
  here receives the pidfd): the program must print ``0``.  Before the
  option table, the shim took S for the container id and the exec ran
  unpinned on 0-1, exit 0, nothing on stderr.  A runtime without the
  option refuses the line: the shim's exit code is the bare runtime's and
  nothing runs.
* Spellings only one parser has: Go's ``-pidfd-socket`` / ``-cwd`` (runc),
  argp's ``--cw`` abbreviation and ``-dpFILE`` clusters (crun): pinned, or
  refused as the bare runtime refuses them.
* An option no table knows, on a release no table lists (a wrapper whose
  ``--version`` says 9.9.9): refused with the reason (on_failure "fail"),
  or handed on with a warning (on_failure "run-unpinned") — never run
  unpinned without a word.

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_shim_options.py [runtime ...]   (default: runc crun)
"""

import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402

GREP = ["grep", "Cpus_allowed_list", "/proc/self/status"]



def check_line(chk, label, c, shim, env, rt, exec_args):
    """exec_args through the shim: pinned on 0 when the bare runtime runs
    the line, else the bare runtime's exit code and no program output."""
    r = fixture.run([shim, "--root", c.root, "exec"] + exec_args + [c.id] + GREP, env=env)
    bare = fixture.run([rt, "--root", c.root, "exec"] + exec_args + [c.id] + GREP)
    if bare.returncode == 0:
        chk.eq(label + ": exit 0", r.returncode, 0, r)
        chk.eq(label + ": pinned on 0", shimlib.allowed_lists(r.stdout), ["0"], r)
    else:
        chk.eq(label + ": the bare runtime's exit code %d" % bare.returncode,
               r.returncode, bare.returncode, r)
        chk.eq(label + ": nothing ran", shimlib.allowed_lists(r.stdout), [], r)


def run_for(name, rt, cli, shim, chk, work):
    kind = shimlib.kind_of(name)
    env = shimlib.shim_env(runtime=rt)
    with fixture.Container(rt, cpus="0-1", annotations={ANNOTATION: "first"}) as c:
        sock = os.path.join(work, "pidfd.sock")
        listener = shimlib.FdSocket(sock)
        try:
            for args in (["--pidfd-socket", sock], ["--pidfd-socket=" + sock]):
                check_line(chk, "%s exec %s" % (name, " ".join(args)), c, shim, env, rt, args)
            # Spellings of one parser only.
            for args in (["-pidfd-socket", sock], ["-cwd", "/"], ["--cw", "/"], ["-ecwd=/"],
                         ["-tX"], ["--e", "A=1"]):
                check_line(chk, "%s exec %s" % (name, " ".join(args)), c, shim, env, rt, args)
        finally:
            listener.close()

        # A release no table lists, an option no table knows.
        wrapper_dir = os.path.join(work, "unlisted")
        os.makedirs(wrapper_dir)
        wrapper = os.path.join(wrapper_dir, kind)
        shimlib.write_script(wrapper, "#!/bin/sh\n"
                             "[ \"$1\" = --version ] && { echo '%s version 9.9.9'; exit 0; }\n"
                             "exec %s \"$@\"\n" % (kind, rt))
        line = [shim, "--root", c.root, "exec", "--new-option", "V", c.id] + GREP
        for on_failure in ("fail", "run-unpinned"):
            cfg = shimlib.write_config(os.path.join(work, "cfg-%s.json" % on_failure),
                                       {"runtime": wrapper, "on_failure": on_failure})
            r = fixture.run(line, env=shimlib.shim_env(config=cfg))
            label = "%s unlisted release, unknown option, on_failure %s" % (name, on_failure)
            chk.check(label + ": exit code not 0", r.returncode != 0, r)
            chk.eq(label + ": nothing ran", shimlib.allowed_lists(r.stdout), [], r)
            chk.contains(label + ": says why", r.stderr, "cannot read the command line")
            if on_failure == "run-unpinned":
                chk.contains(label + ": warns", r.stderr, "running it unpinned")


def main():
    return shimlib.run_per_runtime(run_for, "execaff-options-")


if __name__ == "__main__":
    sys.exit(main())
