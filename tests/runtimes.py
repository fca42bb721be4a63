#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The runtimes under test: tests/runtimes.txt read (Python 3, stdlib only).

    import runtimes
    rt = runtimes.find("runc-1.3.6")    # Runtime, or None when not listed
    rt.path                             # the binary, None when missing
    rt.problem                          # why it is missing, else None
    runtimes.names(applies="no")        # ["runc", "crun"]

From the shell (meson, scripts):

    runtimes.py --names [--applies no,field] [--kind crun]
    runtimes.py --path NAME     # the binary; exit 77 saying why if missing

A malformed list is an error naming the file, the line and the reason.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "runtimes.txt")
KINDS = ("runc", "crun")
APPLIES = ("no", "field", "execaff")
SKIP_CODE = 77

# Where a missing binary comes from, by what the runtime does with the field.
HOW_TO_GET = {
    "no": "contrib/setup-debian.sh installs it",
    "field": "contrib/install-peers.sh installs it",
    "execaff": "tests/run-all.sh builds the fork and sets EXECAFF_CRUN_FORK "
               "(contrib/crun/build-crun.sh --patched)",
}

_VAR = re.compile(r"\$(?:\{(\w+)(?::-([^}]*))?\}|(\w+))")


class ListError(ValueError):
    pass


class Runtime:
    """One line of the list; ``path`` is None when the binary is missing,
    and ``problem`` then says why."""

    def __init__(self, name, kind, applies, path_spec, path, problem):
        self.name, self.kind, self.applies = name, kind, applies
        self.path_spec, self.path, self.problem = path_spec, path, problem

    def __repr__(self):
        return "Runtime(%s %s %s %s)" % (self.name, self.kind, self.applies,
                                         self.path or self.problem)


def _expand(spec, environ):
    """(path, None) or (None, why): $VAR / ${VAR} / ${VAR:-default}."""
    unset = []

    def sub(m):
        var = m.group(1) or m.group(3)
        value = environ.get(var, "")
        if value:
            return value
        if m.group(2) is not None:
            return m.group(2)
        unset.append(var)
        return ""
    path = _VAR.sub(sub, spec)
    if unset:
        return None, "$%s is not set" % unset[0]
    return path, None


def _locate(name, applies, spec, environ):
    path, why = _expand(spec, environ)
    if path is not None:
        if not os.path.isabs(path):
            why = "%s is not an absolute path" % path
        elif not os.path.isfile(path) or not os.access(path, os.X_OK):
            why = "%s is not installed" % path
        else:
            return path, None
    return None, "runtime %s: %s (%s)" % (name, why, HOW_TO_GET[applies])


def load(list_path=LIST, environ=None):
    """Every runtime of the list, in its order."""
    environ = os.environ if environ is None else environ
    out, seen = [], set()
    with open(list_path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            where = "%s:%d" % (list_path, number)
            if len(words) != 4:
                raise ListError("%s: %d fields, want 4 (name kind applies path)"
                                % (where, len(words)))
            name, kind, applies, spec = words
            if name in seen:
                raise ListError("%s: runtime %s listed twice" % (where, name))
            if kind not in KINDS:
                raise ListError("%s: kind %r is none of %s" % (where, kind, ", ".join(KINDS)))
            if applies not in APPLIES:
                raise ListError("%s: applies %r is none of %s"
                                % (where, applies, ", ".join(APPLIES)))
            seen.add(name)
            path, problem = _locate(name, applies, spec, environ)
            out.append(Runtime(name, kind, applies, spec, path, problem))
    return out


def find(name, list_path=LIST):
    """The listed runtime called ``name``, or None."""
    for rt in load(list_path):
        if rt.name == name:
            return rt
    return None


def names(applies=None, kind=None, list_path=LIST):
    """Names in list order, optionally only those whose applies / kind is
    in the given comma-separated set."""
    want_applies = set(applies.split(",")) if applies else None
    want_kind = set(kind.split(",")) if kind else None
    return [rt.name for rt in load(list_path)
            if (want_applies is None or rt.applies in want_applies) and
            (want_kind is None or rt.kind in want_kind)]


def main(argv):
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--names", action="store_true", help="the names, one a line")
    g.add_argument("--path", metavar="NAME", help="the binary of runtime NAME")
    p.add_argument("--applies", help="with --names: only these (no,field,execaff)")
    p.add_argument("--kind", help="with --names: only these (runc,crun)")
    p.add_argument("--list", default=LIST, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        if args.names:
            print("\n".join(names(args.applies, args.kind, args.list)))
            return 0
        rt = find(args.path, args.list)
    except (OSError, ListError) as e:
        print("runtimes.py: %s" % e, file=sys.stderr)
        return 2
    if rt is None:
        print("runtimes.py: no runtime %r in %s" % (args.path, args.list), file=sys.stderr)
        return 2
    if rt.path is None:
        print("SKIP: %s" % rt.problem, file=sys.stderr)
        return SKIP_CODE
    print(rt.path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
