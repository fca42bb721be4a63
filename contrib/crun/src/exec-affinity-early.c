/*
 * crun - OCI runtime written in C
 *
 * Copyright (C) 2026 The execaff authors
 * crun is free software; you can redistribute it and/or modify
 * it under the terms of the GNU Lesser General Public License as published by
 * the Free Software Foundation; either version 2.1 of the License, or
 * (at your option) any later version.
 *
 * crun is distributed in the hope that it will be useful,
 * but WITHOUT ANY WARRANTY; without even the implied warranty of
 * MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
 * GNU Lesser General Public License for more details.
 *
 * You should have received a copy of the GNU Lesser General Public License
 * along with crun.  If not, see <http://www.gnu.org/licenses/>.
 */

#define _GNU_SOURCE

#include <config.h>
#include "exec-affinity.h"
#include "utils.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

/* crun on the node's housekeeping CPUs from the start of its real run.

   An exec that is to be pinned puts crun itself on `initial` once it has
   decided (exec-affinity.c), but everything before that -- parsing the
   arguments, reading and parsing the container's state and config.json
   and the process file -- ran wherever the caller put it, with an
   unpinned caller on a loaded node often a pod's busy CPU.  So this
   constructor, which runs before crun's own (priority 101 < default),
   narrows crun to the node config's housekeeping CPUs for the execs that
   will certainly be pinned, and keeps the caller's CPUs: the decision
   must see those, not the narrowed ones, and a decision that sets no
   `initial` gives them back before anything is forked.

   Where: in the image crun re-executes itself into (libcrun_rexec,
   CVE-2019-5736), not in the first one.  Narrowing the first image too
   was measured (execaff's contrib/crun/DESIGN.md, 4.6): it keeps more of
   crun's start off a busy CPU, but the execveat and the second loader run
   then share one housekeeping CPU, +2.6 % per exec on a 2-CPU machine
   against narrowing after the re-execution, which costs nothing
   measurable.  So it is the node's choice, off by default: with
   "crun_first_image_pin": true in the node config the first image
   narrows itself and hands the caller's CPUs to the re-executed one
   (CALLER_CPUS_ENV), which then leaves its CPUs alone.  Without it the
   first image reads the node config only to see that key.  When crun
   does not copy itself (its binary on a read-only filesystem, as on
   RHCOS), the first image is the only one: it narrows itself, right
   after the loader, whatever the key says.

   "Certainly pinned" is libexecaff's answer (execaff_exec_wants_pinning:
   its decision table, from config.json's skimmed decision members and the
   process file's field), not a second copy of the table here.  It must not
   err towards "yes": on 6.2+ kernels sched_setaffinity leaves a user mask
   behind (user_cpus_ptr) that the exec'd process inherits and that the
   cgroup join intersects with, so giving the CPUs back is not quite the
   same as never having taken them.  Anything unclear (an option this
   scanner does not know, a document libexecaff cannot read, no node
   config, no housekeeping CPUs in it) leaves crun where the caller put it,
   as before; the decision is unchanged.

   libexecaff's one static initializer (libstdc++'s emergency exception
   pool, used only when malloc fails) has not run yet here.  What this file
   calls throws only inside libexecaff, which catches everything at its C
   ABI, and allocates its exceptions with malloc.  */

/* Set by the first image for the one it re-executes (crun's fexecve passes
   its environment on); never reaches the container's process, whose
   environment crun builds from scratch.  */
#define REEXECUTED_ENV "_EXECAFF_CRUN_REEXECUTED"
/* Set beside it when the first image narrowed itself: the caller's CPUs,
   as a list, for the decision.  Honoured only with REEXECUTED_ENV; both
   are removed first thing in every image.  */
#define CALLER_CPUS_ENV "_EXECAFF_CRUN_CALLER_CPUS"

/* The caller's CPUs when this process narrowed itself; NULL otherwise.  */
static char *early_caller_cpus;

/* The node config as read here, for this exec's decision (read once per
   exec, not twice): early_node_config_read says whether it was read, the
   pointer is NULL when there is no file.  */
static execaff_node_config *early_node_config;
static bool early_node_config_read;

struct early_exec_args
{
  execaff_exec_argv *argv; /* owns root and process */
  const char *root;        /* --root, or NULL */
  const char *process;     /* --process, or NULL */
  const char *id;
};

/* The exec's command line read by libexecaff's table of this crun
   release's options, as crun's argp reads it (spec/runtime-options.md):
   the table the shim reads a command line by, checked against each
   release's --help.  False for anything that is not an exec naming a
   container, and for a line crun will refuse: crun's own parser then
   reports it, before anything runs.  */
static bool
scan_exec_argv (int argc, char **argv, struct early_exec_args *out)
{
  execaff_error *e = NULL;
  const char *id;

  memset (out, 0, sizeof (*out));
  if (execaff_exec_argv_read ("crun", PACKAGE_VERSION, argc, (const char *const *) argv, &out->argv, &e) < 0)
    {
      execaff_error_free (e);
      out->argv = NULL;
      return false;
    }
  id = argv[execaff_exec_argv_id_index (out->argv)];
  out->root = execaff_exec_argv_option (out->argv, 1, "root");
  out->process = execaff_exec_argv_option (out->argv, 0, "process");
  if (id[0] == '\0' || strchr (id, '/') || strcmp (id, ".") == 0 || strcmp (id, "..") == 0
      || (out->root && out->root[0] == '\0'))
    return false;
  out->id = id;
  return true;
}

/* The whole file, or NULL: crun's own reader, errors dropped (the decision
   reads it again and reports them).  */
static char *
read_document (const char *path, size_t *len)
{
  libcrun_error_t err = NULL;
  char *buf = NULL;

  if (read_all_file (path, &buf, len, &err) < 0)
    {
      crun_error_release (&err);
      return NULL;
    }
  return buf;
}

/* The list form of MASK (SIZE bytes) into BUF, or false when it does not
   fit.  */
static bool
format_cpus (const cpu_set_t *mask, size_t size, char *buf, size_t buf_len)
{
  size_t used = 0;
  int cpu, ncpus = (int) (size * 8);

  buf[0] = '\0';
  for (cpu = 0; cpu < ncpus; cpu++)
    {
      int last = cpu;
      int n;

      if (! CPU_ISSET_S (cpu, size, mask))
        continue;
      while (last + 1 < ncpus && CPU_ISSET_S (last + 1, size, mask))
        last++;
      if (last == cpu)
        n = snprintf (buf + used, buf_len - used, "%s%d", used ? "," : "", cpu);
      else
        n = snprintf (buf + used, buf_len - used, "%s%d-%d", used ? "," : "", cpu, last);
      if (n < 0 || (size_t) n >= buf_len - used)
        return false;
      used += n;
      cpu = last;
    }
  return used > 0;
}

/* Narrow this process to HOUSEKEEPING ∩ its CPUs; the CPUs it had go to
   early_caller_cpus.  Nothing changes on any failure.  */
static void
narrow_to_housekeeping (const execaff_cpuset *housekeeping)
{
  size_t ncpus, size = 0;
  cpu_set_t *mask = NULL, *narrow = NULL;
  char *list = NULL;
  bool changed = false;
  int cpu;

  /* The kernel's mask may be wider than 1024 CPUs: grow until it fits.  */
  for (ncpus = 1024; ncpus <= 65536; ncpus *= 2)
    {
      free (mask);
      mask = CPU_ALLOC (ncpus);
      if (mask == NULL)
        return;
      size = CPU_ALLOC_SIZE (ncpus);
      if (sched_getaffinity (0, size, mask) == 0)
        break;
      if (errno != EINVAL)
        goto out;
      size = 0;
    }
  if (size == 0)
    goto out;
  narrow = CPU_ALLOC (size * 8);
  list = malloc (size * 8 * 12 + 1);
  if (narrow == NULL || list == NULL)
    goto out;
  CPU_ZERO_S (size, narrow);
  for (cpu = 0; cpu < (int) (size * 8); cpu++)
    if (CPU_ISSET_S (cpu, size, mask))
      {
        if (execaff_cpuset_contains (housekeeping, cpu))
          CPU_SET_S (cpu, size, narrow);
        else
          changed = true;
      }
  /* No housekeeping CPU to go to, or already on them only.  */
  if (CPU_COUNT_S (size, narrow) == 0 || ! changed)
    goto out;
  if (! format_cpus (mask, size, list, size * 8 * 12 + 1) || sched_setaffinity (0, size, narrow) < 0)
    goto out;
  early_caller_cpus = list;
  list = NULL;
out:
  free (list);
  if (narrow)
    CPU_FREE (narrow);
  if (mask)
    CPU_FREE (mask);
}

/* Whether crun's binary is one libcrun_rexec will not copy: on a read-only
   filesystem (cloned_binary.c, is_self_cloned).  A sealed memfd is the
   other such case; it is not looked for, and crun then narrows itself only
   once it has decided, as before.  */
static bool
binary_on_read_only_fs (void)
{
  struct statfs fs;

  return statfs ("/proc/self/exe", &fs) == 0 && (fs.f_flags & ST_RDONLY);
}

__attribute__ ((constructor (101))) static void
libcrun_exec_affinity_pin_early (int argc, char **argv, char **envp arg_unused)
{
  struct early_exec_args args = { 0 };
  execaff_node_config *node = NULL;
  execaff_error *e = NULL;
  const execaff_cpuset *housekeeping;
  char *config = NULL, *process = NULL, *path = NULL;
  size_t config_len = 0, process_len = 0;
  bool reexecuted = getenv (REEXECUTED_ENV) != NULL;
  bool first_image = false;
  const char *narrowed = reexecuted ? getenv (CALLER_CPUS_ENV) : NULL;
  char *caller = narrowed && *narrowed ? strdup (narrowed) : NULL;

  unsetenv (REEXECUTED_ENV);
  unsetenv (CALLER_CPUS_ENV);
  if (argv == NULL || ! scan_exec_argv (argc, argv, &args))
    goto out;
  if (! reexecuted && ! binary_on_read_only_fs ())
    {
      /* The first image: the re-executed one narrows itself, unless the
         node config asks for this one (crun_first_image_pin).  */
      setenv (REEXECUTED_ENV, "1", 1);
      first_image = true;
    }
  if (args.root == NULL && geteuid () != 0)
    goto out; /* crun's rootless state directory: not looked for here.  */

  /* On an error the decision reads it again, reports it and fails the
     exec.  */
  if (execaff_node_config_load (NULL, &node, &e) < 0)
    goto out;
  if (first_image && ! execaff_node_config_crun_first_image_pin (node))
    {
      /* As without the key: the re-executed image reads it again.  */
      execaff_node_config_free (node);
      goto out;
    }
  early_node_config = node;
  early_node_config_read = true;
  if (caller)
    {
      /* The first image narrowed crun: these are the caller's CPUs.  */
      early_caller_cpus = caller;
      caller = NULL;
      goto out;
    }
  housekeeping = execaff_node_config_housekeeping_cpus (node);
  if (housekeeping == NULL || execaff_cpuset_count (housekeeping) == 0)
    goto out;
  if (asprintf (&path, "%s/%s/config.json", args.root ? args.root : "/run/crun", args.id) < 0)
    {
      path = NULL;
      goto out;
    }
  config = read_document (path, &config_len);
  if (config == NULL)
    goto out;
  if (args.process)
    {
      /* "-" is crun's stdin, which is crun's to read.  */
      if (strcmp (args.process, "-") == 0)
        goto out;
      process = read_document (args.process, &process_len);
      if (process == NULL)
        goto out;
    }
  /* libexecaff's own answer (its decision table); a document it cannot
     read is the decision's to report: crun stays where it is.  */
  if (execaff_exec_wants_pinning (config, config_len, process, process_len, node, &e) > 0)
    {
      narrow_to_housekeeping (housekeeping);
      if (first_image && early_caller_cpus)
        setenv (CALLER_CPUS_ENV, early_caller_cpus, 1);
    }
out:
  execaff_exec_argv_free (args.argv);
  execaff_error_free (e);
  free (caller);
  free (path);
  free (config);
  free (process);
}

bool
libcrun_exec_affinity_take_early_node_config (execaff_node_config **out)
{
  if (! early_node_config_read)
    return false;
  *out = early_node_config;
  early_node_config = NULL;
  early_node_config_read = false;
  return true;
}

const char *
libcrun_exec_affinity_early_caller_cpus (void)
{
  return early_caller_cpus;
}

int
libcrun_exec_affinity_undo_early_pin (libcrun_error_t *err)
{
  execaff_cpuset *cpus = NULL;
  execaff_error *e = NULL;
  int ret;

  unsetenv (REEXECUTED_ENV);
  unsetenv (CALLER_CPUS_ENV);
  if (early_caller_cpus == NULL)
    return 0;
  ret = execaff_cpuset_parse (early_caller_cpus, &cpus, &e);
  if (ret >= 0)
    ret = execaff_apply_cpuset (cpus, getpid (), "the caller's CPUs, given back", &e);
  execaff_cpuset_free (cpus);
  if (UNLIKELY (ret < 0))
    {
      ret = crun_make_error (err, e ? -execaff_error_code (e) : -ret, "exec CPU affinity: %s",
                             e ? execaff_error_message (e) : "internal error");
      execaff_error_free (e);
      return ret;
    }
  free (early_caller_cpus);
  early_caller_cpus = NULL;
  return 0;
}
