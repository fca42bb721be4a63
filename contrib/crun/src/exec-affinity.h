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

/* execaff's fork of crun: what crun's own files call (the hooks in
   execaff's contrib/crun/<version>/*.patch) and what the fork's files share.
   These files live in execaff's contrib/crun/src/ and are copied into
   src/libcrun/ by contrib/crun/build-crun.sh, which also defines
   EXECAFF_CRUN_VERSION (10801 for crun 1.8.1, 12100 for 1.21) and links
   libexecaff.  */
#ifndef EXEC_AFFINITY_H
#define EXEC_AFFINITY_H
#include <config.h>

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <ocispec/runtime_spec_schema_config_schema.h>
#include <execaff/execaff.h>
#include "error.h"

#ifndef EXECAFF_CRUN_VERSION
#  error "EXECAFF_CRUN_VERSION is not defined: build the fork with execaff's contrib/crun/build-crun.sh"
#endif

/* process.execCPUAffinity (OCI runtime-spec >= 1.2.1, config.md) for an
   exec'd process, as decided by libexecaff.  A NULL pointer means "leave
   this exec exactly alone": every function below accepts it.  */
struct libcrun_exec_affinity_s;

#if EXECAFF_CRUN_VERSION >= 11900
/* crun >= 1.19: libocispec knows the field (exec-affinity-parsed.c).
   Before anything is forked: *OUT stays NULL, and the exec is left alone,
   unless libexecaff decides to pin it.  DEF is the container's config.json
   as crun parsed it from CONFIG_FILE, PROCESS the exec's process, read from
   PROCESS_FILE (NULL when it came from the command line); both only name
   the documents in messages, neither is read again.  libexecaff is not
   even asked unless PROCESS or DEF sets the field, DEF has the annotation,
   or the node config has a handler default.  */
int libcrun_exec_affinity_decide (runtime_spec_schema_config_schema *def, const char *config_file,
                                  runtime_spec_schema_config_schema_process *process,
                                  const char *process_file, pid_t init_pid,
                                  struct libcrun_exec_affinity_s **out, libcrun_error_t *err);
#else
/* crun 1.8.1: libocispec drops the field (exec-affinity-documents.c), so
   the decision reads the documents: PROCESS_JSON is the exec's process
   file as crun read it (NULL for the command-line form), CONFIG_FILE the
   state directory's config.json.  libexecaff is not even asked unless a
   document names the field or the annotation, or the node config has a
   handler default.  */
int libcrun_exec_affinity_decide (const char *process_json, size_t process_json_len,
                                  const char *config_file, pid_t init_pid,
                                  struct libcrun_exec_affinity_s **out, libcrun_error_t *err);
#endif

/* Whether the decision sets `initial`: the exec is then moved into the
   container's cgroup by the parent, not cloned into it.  */
bool libcrun_exec_affinity_has_initial (const struct libcrun_exec_affinity_s *affinity);

int libcrun_exec_affinity_apply_initial (const struct libcrun_exec_affinity_s *affinity, pid_t pid,
                                         libcrun_error_t *err);

int libcrun_exec_affinity_apply_final (const struct libcrun_exec_affinity_s *affinity, pid_t pid,
                                       libcrun_error_t *err);

void libcrun_exec_affinity_free (struct libcrun_exec_affinity_s *affinity);

void cleanup_exec_affinityp (void *p);
#define cleanup_exec_affinity __attribute__ ((cleanup (cleanup_exec_affinityp)))

/* Shared by the fork's files, not called by crun's.  */

/* A libexecaff error as crun's: RET or E's errno, E's message.  Frees E.  */
int libcrun_exec_affinity_error (libcrun_error_t *err, int ret, execaff_error *e);

/* The node's execaff config for this exec's decision (NULL: no file): the
   one exec-affinity-early.c read, or read now.  A file that cannot be used
   fails the exec with the reason.  */
int libcrun_exec_affinity_node_config (execaff_node_config **out, libcrun_error_t *err);

/* REQ (the exec's documents set) decided with NODE and the container's
   init pid; *OUT set when pinned, and crun itself then moved onto
   `initial`.  Without an `initial`, crun goes back to the caller's CPUs
   when it left them at its start.  */
int libcrun_exec_affinity_finish (execaff_request *req, const execaff_node_config *node, pid_t init_pid,
                                  struct libcrun_exec_affinity_s **out, libcrun_error_t *err);

void cleanup_execaff_requestp (void *p);
#define cleanup_execaff_request __attribute__ ((cleanup (cleanup_execaff_requestp)))
void cleanup_execaff_node_configp (void *p);
#define cleanup_execaff_node_config __attribute__ ((cleanup (cleanup_execaff_node_configp)))

/* exec-affinity-early.c.  The CPUs the caller gave crun, as a list, when
   crun narrowed itself to the node's housekeeping CPUs at its start; NULL
   when it did not.  */
const char *libcrun_exec_affinity_early_caller_cpus (void);

/* The node config exec-affinity-early.c read for this exec, handed over
   once (*OUT may be NULL: no file); false when it did not read it.  */
bool libcrun_exec_affinity_take_early_node_config (execaff_node_config **out);

/* Gives crun back the caller's CPUs after an early narrowing (no-op
   otherwise).  */
int libcrun_exec_affinity_undo_early_pin (libcrun_error_t *err);

#endif
