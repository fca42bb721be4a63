#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libexecaff's option tables against each runtime's own --help
(issue 27 section 1, spec/runtime-options.md).

For a runtime of tests/runtimes.txt: its `--version` first line names the
release, whose table must exist; then `RT --help` (the global options) and
`RT exec --help`, `RT create --help`, `RT run --help` are parsed — urfave/cli's
"--env value, -e value" lines for runc, argp's "-e, --env=ENV" /
"-t, --tty[=TTY]" lines for crun — and every option (its long name, its
short forms, whether it takes a value, required or optional) must be the
table's, and the table must have no option the help lacks but those it marks hidden
(accepted, not listed: runc 1.2+'s --criu).  Whether an
option repeats is not in the help text; the unit tests and the sources
hold that.

Exit codes: 0 pass, 1 fail, 77 skip (the runtime is not installed).
Usage: test_runtime_help.py DUMP_PROGRAM RUNTIME-NAME
"""

import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import runtimes  # noqa: E402

COMMANDS = ("exec", "create", "run")


def run(argv):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=30)
    return r.stdout + r.stderr


def runc_options(text, section):
    """urfave/cli v1: "   --env value, -e value  description" under SECTION."""
    found, inside = {}, False
    for line in text.splitlines():
        if line.strip().endswith(section):
            inside = True
            continue
        if not inside:
            continue
        m = re.match(r"^ {3}(-\S.*?)(?: {2,}|$)", line)
        if not m:
            if line.strip() and not line.startswith(" "):
                break
            continue
        long_name, shorts, argument = None, "", "none"
        for part in m.group(1).split(", "):
            words = part.split()
            if len(words) > 1 and words[1] == "value":
                argument = "required"
            name = words[0]
            if name.startswith("--"):
                long_name = name[2:]
            else:
                shorts += name[1:]
        found[long_name] = (shorts, argument)
    return found


def crun_options(text):
    """argp: "  -e, --env=ENV   description", "  -t, --tty[=TTY]", "  -v, -V, --version"."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"^ {2}((?:-\S, )*)(?: {4})?--([a-z0-9-]+)(\[=[^\]]+\]|=\S+)?(?:\s|$)", line)
        if not m:
            continue
        shorts = "".join(s.strip()[1] for s in m.group(1).split(",") if s.strip())
        arg = m.group(3)
        argument = "none" if not arg else ("optional" if arg.startswith("[") else "required")
        found[m.group(2)] = (shorts, argument)
    return found


def table_options(options):
    """The options --help lists: not those the table marks hidden."""
    return {o["name"]: (o["shorts"], o["argument"]) for o in options if not o["hidden"]}


def compare(label, from_help, from_table, failures):
    if not from_help:
        failures.append("%s: no option found in the help text" % label)
        return
    for name in sorted(set(from_help) | set(from_table)):
        h, t = from_help.get(name), from_table.get(name)
        if h != t:
            failures.append("%s --%s: help says %s, the table %s" % (
                label, name, h or "nothing", t or "nothing"))


def main():
    dump, name = sys.argv[1], sys.argv[2]
    rt = runtimes.find(name)
    if rt is None:
        print("FAIL %s is not in %s" % (name, runtimes.LIST))
        return 1
    if rt.path is None:
        print("SKIP %s" % rt.problem)
        return 77
    tables = json.loads(subprocess.run([dump], check=True, capture_output=True,
                                       text=True).stdout)
    version = run([rt.path, "--version"]).splitlines()[0]
    m = re.match(r"^(runc|crun) version (\S+)", version)
    release = m and re.split(r"[+-]", m.group(2))[0]
    table = next((t for t in tables if m and t["kind"] == m.group(1) and t["release"] == release),
                 None)
    if table is None:
        print("FAIL %s (%s): %r names no release libexecaff has a table for (it has %s)" % (
            name, rt.path, version, ", ".join("%s %s" % (t["kind"], t["release"]) for t in tables)))
        return 1
    label = "%s (%s %s)" % (name, table["kind"], table["release"])
    failures = []
    if table["kind"] == "runc":
        compare(label + " global", runc_options(run([rt.path, "--help"]), "GLOBAL OPTIONS:"),
                table_options(table["global"]), failures)
    else:
        compare(label + " global", crun_options(run([rt.path, "--help"])),
                table_options(table["global"]), failures)
    for command in COMMANDS:
        text = run([rt.path, command, "--help"])
        found = runc_options(text, "OPTIONS:") if table["kind"] == "runc" else crun_options(text)
        compare("%s %s" % (label, command), found,
                table_options(table["commands"].get(command, [])), failures)
    for f in failures:
        print("FAIL " + f)
    checked = 1 + len(COMMANDS)
    print("%s: %d option lists against --help, %d disagreements" % (label, checked, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
