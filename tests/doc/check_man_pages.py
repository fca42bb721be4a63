#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The man pages render cleanly and say what the code does, both ways.

* each built page (scdoc output) renders with groff -man -ww, and with
  man -l --warnings when man is installed, without a single warning;
* execaff-shim(8): the CONFIGURATION keys are exactly the keys
  libexecaff/src/node_config.cpp accepts and spec/schema/shim-config.schema.json
  lists; the ENVIRONMENT variables exactly those the shim reads (getenv);
* execaff(1): the flags (lines "*--flag*") are exactly the long options of
  cli/*.cpp (their option tables and the dispatcher's --version/--help);
  the FINDINGS exactly the finding kinds cli/audit_scan.cpp names;
* libexecaff(3): the functions are exactly those execaff.h declares and the
  built libexecaff.so exports (libexecaff.map admits each), the constants
  exactly the header's.

usage: check_man_pages.py SOURCE_ROOT LIBEXECAFF_SO PAGE...
"""
import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
import sys

failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else "\n     " + detail))
    if not ok:
        failures.append(what)


def same(documented, implemented, what):
    missing = sorted(implemented - documented)
    extra = sorted(documented - implemented)
    check(not missing and not extra, what,
          "in the code, not documented: %s; documented, not in the code: %s" % (missing, extra))


def section(text, title):
    m = re.search(r"^# %s\n(.*?)(?=^# |\Z)" % re.escape(title), text, re.M | re.S)
    return m.group(1) if m else ""


def read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def render(page):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page], capture_output=True,
                       text=True, env=env)
    check(r.returncode == 0 and r.stderr == "", "%s renders with groff -ww" % os.path.basename(page),
          r.stderr.strip())
    if shutil.which("man"):
        r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True,
                           env=env)
        check(r.returncode == 0 and r.stderr == "" and "NAME" in r.stdout,
              "%s renders with man -l --warnings" % os.path.basename(page), r.stderr.strip())


def main():
    src, libso, pages = sys.argv[1], sys.argv[2], sys.argv[3:]
    for page in pages:
        render(page)
    doc = os.path.join(src, "doc")

    shim = read(doc, "execaff-shim.8.scd")
    documented = set(re.findall(r"^\*([a-z_]+)\*$", section(shim, "CONFIGURATION"), re.M))
    # The reader is libexecaff's, shared with the forked crun.
    code = set(re.findall(r'\bk(?:ey)? == "([a-z_]+)"',
                          read(src, "libexecaff", "src", "node_config.cpp")))
    schema = set(json.loads(read(src, "spec", "schema", "shim-config.schema.json"))["properties"])
    same(documented, code, "execaff-shim(8) config keys = libexecaff/src/node_config.cpp's")
    same(documented, schema, "execaff-shim(8) config keys = the schema's properties")
    documented = set(re.findall(r"^\*([A-Z_]+)\*$", section(shim, "ENVIRONMENT"), re.M))
    code = set()
    for path in glob.glob(os.path.join(src, "shim", "*.cpp")):
        code |= set(re.findall(r'getenv\("([A-Z_]+)"\)', read(path)))
    # EXECAFF_CONFIG: read by libexecaff's node-config reader for the shim.
    code |= set(re.findall(r'kNodeConfigVariable = "([A-Z_]+)"',
                           read(src, "libexecaff", "src", "node_config.hpp")))
    same(documented, code, "execaff-shim(8) environment = the shim's getenv calls")

    cli = read(doc, "execaff.1.scd")
    documented = set(re.findall(r"^\*(--[a-z-]+)\*", cli, re.M))
    code = set()
    for path in glob.glob(os.path.join(src, "cli", "*.cpp")):
        text = read(path)
        code |= {"--" + n for n in re.findall(r'\{"([a-z-]+)", (?:required|no)_argument', text)}
        code |= set(re.findall(r'command == "(--[a-z-]+)"', text))
    same(documented, code, "execaff(1) flags = cli/'s options")
    documented = set(re.findall(r"^\*([a-z_]+)\*$", section(cli, "FINDINGS"), re.M))
    code = set(re.findall(r'case FindingKind::[a-z_]+: return "([a-z_]+)";',
                          read(src, "cli", "audit_scan.cpp")))
    same(documented, code, "execaff(1) findings = cli/audit_scan.cpp's finding kinds")

    lib = read(doc, "libexecaff.3.scd")
    header = read(src, "libexecaff", "include", "execaff", "execaff.h")
    documented = set(re.findall(r"^\*(execaff_[a-z_]+)\*\(", lib, re.M))
    declared = set(re.findall(r"\b(execaff_[a-z_]+)\(", header))
    same(documented, declared, "libexecaff(3) functions = execaff.h's")
    nm = subprocess.run(["nm", "-D", "--defined-only", libso], capture_output=True, text=True)
    exported = {line.split()[-1].split("@")[0] for line in nm.stdout.splitlines()
                if line.split()[-1].startswith("execaff_")}
    same(documented, exported, "libexecaff(3) functions = libexecaff.so's exports")
    mapping = read(src, "libexecaff", "libexecaff.map")
    globals_ = re.findall(r"^\s+(execaff_[a-z_*]+);", mapping.split("local:")[0], re.M)
    check(all(any(fnmatch.fnmatch(f, g) for g in globals_) for f in documented),
          "libexecaff.map exports every documented function", str(globals_))
    documented = set(re.findall(r"\*(EXECAFF_[A-Z_]+)\*", section(lib, "CONSTANTS")))
    defined = set(re.findall(r"#define (EXECAFF_[A-Z_]+) ", header)) - {
        "EXECAFF_PUBLIC", "EXECAFF_NODISCARD"}
    same(documented, defined, "libexecaff(3) constants = execaff.h's")

    if failures:
        print("\n%d checks FAILED" % len(failures))
        return 1
    print("\nall man page checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
