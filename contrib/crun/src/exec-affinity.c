/*
 * crun - OCI runtime written in C
 *
 * Copyright (C) 2025 The execaff authors
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

/* The exec's CPU affinity as libexecaff decides it, and its two stages
   applied where crun's hooks call them; the fork's ELF note.  What differs
   between crun versions -- how the exec's documents reach libexecaff -- is
   in exec-affinity-documents.c (1.8.1) and exec-affinity-parsed.c (1.21).

   Which CPUs an exec'd process runs on is decided by libexecaff: the pod's
   exec-cpu-affinity.execaff.io annotation policy when there is one, else the
   exec's process.execCPUAffinity, else the container's (config.json, as runc
   does), else nothing (execaff's spec/decision-table.md).  crun only applies
   the two sets at the two points config.md names.

   The node's execaff config (/etc/execaff/shim.json, or $EXECAFF_CONFIG:
   the file execaff-shim reads, with the same rules) gives the housekeeping
   CPUs that bound `initial` and the runtime handler's default policy, so
   that a CRI-O handler can point at this crun directly.  Its
   handler_default can opt in a pod whose documents say nothing, so every
   exec looks for it: on a node without the file that is one failed open.

   libexecaff is linked statically (its archive carries its C++ runtime,
   hidden): as a shared library, mapped into both of crun's images or
   dlopen()ed by a pinned exec, it cost such execs 5-7% in the loader's
   mmaps and page faults alone (execaff's contrib/crun/DESIGN.md, 8).  */

#define _GNU_SOURCE

#include <config.h>
#include "exec-affinity.h"
#include "utils.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An ELF note (name "execaff", type 1) that says this crun applies
   process.execCPUAffinity itself.  execaff-shim reads it from the program
   headers (PT_NOTE) instead of running `crun --version`.  In this file,
   which crun's exec path always links, so the note is in every build.  */
__asm__ (".pushsection .note.execaff, \"a\", @note\n"
         ".balign 4\n"
         ".long 2f - 1f\n" /* namesz */
         ".long 4f - 3f\n" /* descsz */
         ".long 1\n"       /* type */
         "1: .asciz \"execaff\"\n"
         "2: .balign 4\n"
         "3: .asciz \"exec-cpu-affinity\"\n"
         "4: .balign 4\n"
         ".popsection\n");

struct libcrun_exec_affinity_s
{
  execaff_decision *decision;
};

/* libexecaff returns a negative errno and a message that names the stage
   (the field or annotation and its source, or "initial"/"final" and the
   pid), the CPUs asked for and why they were refused.  */
int
libcrun_exec_affinity_error (libcrun_error_t *err, int ret, execaff_error *e)
{
  int errno_ = e ? -execaff_error_code (e) : -ret;

  ret = crun_make_error (err, errno_, "exec CPU affinity: %s", e ? execaff_error_message (e) : "internal error");
  execaff_error_free (e);
  return ret;
}

int
libcrun_exec_affinity_node_config (execaff_node_config **out, libcrun_error_t *err)
{
  execaff_error *e = NULL;
  int ret;

  /* Read on every exec, never cached (exec-affinity-early.c may have read
     it for this exec already).  NULL when there is no file.  A file
     that cannot be used (not root's, on a path others may write, a link,
     a duplicate or unknown key, half-written) fails the exec with the
     reason: never a silent default.  */
  *out = NULL;
  if (libcrun_exec_affinity_take_early_node_config (out))
    return 0;
  ret = execaff_node_config_load (NULL, out, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);
  return 0;
}

static int
finish (execaff_request *req, const execaff_node_config *node, pid_t init_pid,
        struct libcrun_exec_affinity_s **out, libcrun_error_t *err)
{
  execaff_decision *decision = NULL;
  execaff_error *e = NULL;
  int ret;

  ret = execaff_request_set_node_config (req, node, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);

  /* When crun narrowed itself to the housekeeping CPUs at its start
     (exec-affinity-early.c), the caller's CPUs are the ones it had before:
     the decision is the one it would have been without that.  */
  if (libcrun_exec_affinity_early_caller_cpus ())
    {
      ret = execaff_request_set_caller_cpus (req, libcrun_exec_affinity_early_caller_cpus (), &e);
      if (UNLIKELY (ret < 0))
        return libcrun_exec_affinity_error (err, ret, e);
    }

  /* The container's live cpuset is read from the init's cgroup, and only
     when the exec is to be pinned.  */
  ret = execaff_request_set_container_pid (req, init_pid, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);

  ret = execaff_decide (NULL, req, &decision, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);

  if (! execaff_decision_is_pinned (decision))
    {
      execaff_decision_free (decision);
      return 0;
    }

  /* config.md: `initial` is where the runtime's parent process runs before
     the move into the cgroup.  So this process too, not only the grandchild:
     crun's own work and every child it forks stay on the housekeeping CPUs
     instead of wherever the caller ran (an unpinned caller put them on the
     pod's busy CPUs), as execaff-shim pins itself before it execs the
     runtime.  crun is single-threaded here.  */
  ret = execaff_apply_initial (decision, getpid (), &e);
  if (UNLIKELY (ret < 0))
    {
      execaff_decision_free (decision);
      return libcrun_exec_affinity_error (err, ret, e);
    }

  *out = xmalloc0 (sizeof (**out));
  (*out)->decision = decision;
  return 0;
}

int
libcrun_exec_affinity_finish (execaff_request *req, const execaff_node_config *node, pid_t init_pid,
                              struct libcrun_exec_affinity_s **out, libcrun_error_t *err)
{
  int ret = req ? finish (req, node, init_pid, out, err) : 0;

  /* crun moved itself onto `initial` when the decision has one; otherwise
     it goes back to the CPUs the caller gave it, if it left them at its
     start, before anything is forked.  */
  if (ret >= 0 && ! libcrun_exec_affinity_has_initial (*out))
    ret = libcrun_exec_affinity_undo_early_pin (err);
  return ret;
}

bool
libcrun_exec_affinity_has_initial (const struct libcrun_exec_affinity_s *affinity)
{
  return affinity != NULL && execaff_decision_initial (affinity->decision) != NULL;
}

/* Both apply functions set every thread of PID, read the mask back and fail
   when the kernel refused or clipped it (sched_setaffinity(2) fails with
   EINVAL for CPUs wholly outside the task's cpuset, crun#1915).  A stage the
   decision leaves unset is not touched.  Called by crun's
   join_process_parent_helper: `initial` while the grandchild is blocked on
   the sync socket and still outside the container's cgroup, `final` after
   the move and before the release, so it is what the user's program starts
   with whatever the join did to the mask (before Linux 6.2 a cpuset join
   resets it to the cpuset, since 6.2 it keeps cpuset & initial).  On any
   error crun returns before releasing the grandchild: it reads EOF and
   exits without running the user's program.  */
int
libcrun_exec_affinity_apply_initial (const struct libcrun_exec_affinity_s *affinity, pid_t pid,
                                     libcrun_error_t *err)
{
  execaff_error *e = NULL;
  int ret;

  if (affinity == NULL)
    return 0;

  ret = execaff_apply_initial (affinity->decision, pid, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);
  return 0;
}

int
libcrun_exec_affinity_apply_final (const struct libcrun_exec_affinity_s *affinity, pid_t pid,
                                   libcrun_error_t *err)
{
  execaff_error *e = NULL;
  int ret;

  if (affinity == NULL)
    return 0;

  ret = execaff_apply_final (affinity->decision, pid, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);
  return 0;
}

void
libcrun_exec_affinity_free (struct libcrun_exec_affinity_s *affinity)
{
  if (affinity == NULL)
    return;
  execaff_decision_free (affinity->decision);
  free (affinity);
}

void
cleanup_execaff_requestp (void *p)
{
  execaff_request **req = (execaff_request **) p;
  execaff_request_free (*req);
}

void
cleanup_execaff_node_configp (void *p)
{
  execaff_node_config **config = (execaff_node_config **) p;
  execaff_node_config_free (*config);
}

void
cleanup_exec_affinityp (void *p)
{
  struct libcrun_exec_affinity_s **affinity = (struct libcrun_exec_affinity_s **) p;
  libcrun_exec_affinity_free (*affinity);
}
