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

/* The exec's decision on crun < 1.19 (the 1.8.1 fork): its libocispec
   predates process.execCPUAffinity and silently drops unknown keys, so
   libexecaff is handed the documents themselves -- the process file as
   crun read it, and the state directory's config.json.

   libexecaff decides only for an exec whose process file or config.json
   names the field or the annotation, or when the node config has a
   handler default: every other exec costs one read of config.json, two
   memmem and the look for the node config.  */

#define _GNU_SOURCE

#include <config.h>
#include "exec-affinity.h"
#include "utils.h"

#include <stdlib.h>
#include <string.h>

/* Whether DOC can name anything libexecaff acts on: the field or the
   annotation key.  A key spelled with a \u escape cannot be found by bytes,
   so any escape counts as a maybe; a false maybe only costs a decision.  */
static bool
may_opt_in (const char *doc, size_t len)
{
  static const char *const keys[] = { "execCPUAffinity", EXECAFF_ANNOTATION, "\\u" };
  size_t i;

  if (doc == NULL)
    return false;
  for (i = 0; i < sizeof (keys) / sizeof (keys[0]); i++)
    if (memmem (doc, len, keys[i], strlen (keys[i])))
      return true;
  return false;
}

int
libcrun_exec_affinity_decide (const char *process_json, size_t process_json_len, const char *config_file,
                              pid_t init_pid, struct libcrun_exec_affinity_s **out, libcrun_error_t *err)
{
  cleanup_execaff_request execaff_request *req = NULL;
  cleanup_execaff_node_config execaff_node_config *node = NULL;
  cleanup_free char *config_json = NULL;
  execaff_error *e = NULL;
  size_t config_json_len = 0;
  int ret;

  *out = NULL;

  /* The state directory's copy, byte for byte the bundle's config.json at
     create time: its process.execCPUAffinity is the default for execs that
     carry none, its annotations hold the pod's opt-in.  */
  ret = read_all_file (config_file, &config_json, &config_json_len, err);
  if (UNLIKELY (ret < 0))
    return ret;

  ret = libcrun_exec_affinity_node_config (&node, err);
  if (UNLIKELY (ret < 0))
    return ret;

  /* Neither document names the field or the annotation and the node has no
     handler default: libexecaff would decide "not pinned", so it is not
     asked.  */
  if (! may_opt_in (process_json, process_json_len) && ! may_opt_in (config_json, config_json_len)
      && execaff_node_config_handler_default (node) == NULL)
    return libcrun_exec_affinity_finish (NULL, node, init_pid, out, err);

  ret = execaff_request_new (&req, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);

  /* The raw document, not the parsed process.  NULL for execs given on
     the command line, which carry no field.  */
  if (process_json)
    {
      ret = execaff_request_set_process_json (req, process_json, process_json_len, &e);
      if (UNLIKELY (ret < 0))
        return libcrun_exec_affinity_error (err, ret, e);
    }

  ret = execaff_request_set_config_json (req, config_json, config_json_len, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);

  return libcrun_exec_affinity_finish (req, node, init_pid, out, err);
}
