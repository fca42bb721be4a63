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

/* The exec's decision on crun >= 1.19 (the 1.21 fork), whose libocispec
   knows process.execCPUAffinity: libexecaff is handed the values crun
   parsed, not the documents, so config.json and the process file are read
   and parsed once, by crun.

   libexecaff decides only for an exec whose process or config.json sets
   the field or whose config.json has the annotation, or when the node
   config has a handler default: every other exec costs a few pointer
   tests on what crun parsed and the look for the node config.  */

#define _GNU_SOURCE

#include <config.h>
#include "exec-affinity.h"
#include "utils.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if EXECAFF_CRUN_VERSION < 11900
#  error "exec-affinity-parsed.c needs a libocispec with process.execCPUAffinity (crun >= 1.19)"
#endif

/* A list counts when it names something: "" and null are "not set", in
   libexecaff's rules as in crun's has_exec_cpu_affinity.  */
static bool
affinity_set (const runtime_spec_schema_config_schema_process_exec_cpu_affinity *affinity)
{
  return affinity != NULL
         && ((affinity->initial && affinity->initial[0]) || (affinity->final && affinity->final[0]));
}

static const runtime_spec_schema_config_schema_process_exec_cpu_affinity *
config_affinity (const runtime_spec_schema_config_schema *def)
{
  return def->process ? def->process->exec_cpu_affinity : NULL;
}

static const char *
config_cpus (const runtime_spec_schema_config_schema *def)
{
  if (def->linux == NULL || def->linux->resources == NULL || def->linux->resources->cpu == NULL)
    return NULL;
  return def->linux->resources->cpu->cpus;
}

static bool
has_annotation (const runtime_spec_schema_config_schema *def, const char *key)
{
  size_t i;

  if (def->annotations == NULL)
    return false;
  for (i = 0; i < def->annotations->len; i++)
    if (strcmp (def->annotations->keys[i], key) == 0)
      return true;
  return false;
}

/* The annotations libexecaff reads, each once: libocispec keeps every copy
   of a key named twice, and crun's own look-ups take the first, so which
   one counts would depend on who reads it (libexecaff's JSON reader
   refuses such a document for the same reason).  No other annotation is
   handed over.  */
static int
set_annotations (execaff_request *req, const runtime_spec_schema_config_schema *def,
                 const char *config_source, execaff_error **e, libcrun_error_t *err)
{
  static const char *const keys[] = { EXECAFF_ANNOTATION, EXECAFF_OPENSHIFT_ANNOTATION };
  bool seen[2] = { false, false };
  size_t i, k;
  int ret;

  if (def->annotations == NULL)
    return 0;
  for (i = 0; i < def->annotations->len; i++)
    {
      for (k = 0; k < 2; k++)
        {
          if (strcmp (def->annotations->keys[i], keys[k]) != 0)
            continue;
          if (seen[k])
            return crun_make_error (err, EINVAL,
                                    "exec CPU affinity: %s: annotations.%s: the key appears more than once; "
                                    "runtimes disagree on which wins",
                                    config_source, keys[k]);
          seen[k] = true;
          ret = execaff_request_set_annotation (req, keys[k], def->annotations->values[i], e);
          if (UNLIKELY (ret < 0))
            return libcrun_exec_affinity_error (err, ret, *e);
        }
    }
  return 0;
}

int
libcrun_exec_affinity_decide (runtime_spec_schema_config_schema *def, const char *config_file,
                              runtime_spec_schema_config_schema_process *process, const char *process_file,
                              pid_t init_pid, struct libcrun_exec_affinity_s **out, libcrun_error_t *err)
{
  cleanup_execaff_request execaff_request *req = NULL;
  cleanup_execaff_node_config execaff_node_config *node = NULL;
  cleanup_free char *config_source = NULL;
  cleanup_free char *process_source = NULL;
  execaff_error *e = NULL;
  int ret;

  *out = NULL;

  ret = libcrun_exec_affinity_node_config (&node, err);
  if (UNLIKELY (ret < 0))
    return ret;

  /* Neither the process nor config.json sets the field, config.json has no
     annotation and the node no handler default: libexecaff would decide
     "not pinned", so it is not asked.  The OpenShift annotation alone can
     only opt out.  */
  if (! affinity_set (process->exec_cpu_affinity) && ! affinity_set (config_affinity (def))
      && ! has_annotation (def, EXECAFF_ANNOTATION) && execaff_node_config_handler_default (node) == NULL)
    return libcrun_exec_affinity_finish (NULL, node, init_pid, out, err);

  ret = execaff_request_new (&req, &e);
  if (UNLIKELY (ret < 0))
    return libcrun_exec_affinity_error (err, ret, e);

  /* The values crun parsed, judged by libexecaff with the rules
     execaff-shim applies (its list grammar), and named in its messages as
     the documents they came from: the state directory's copy of the
     bundle's config.json, and the process file (none for an exec given
     on the command line, which carries no field).  */
  xasprintf (&config_source, "config \"%s\"", config_file);
  if (process_file)
    xasprintf (&process_source, "process file \"%s\"", process_file);

  if (process->exec_cpu_affinity)
    {
      ret = execaff_request_set_process_affinity (req, process->exec_cpu_affinity->initial,
                                                  process->exec_cpu_affinity->final, process_source, &e);
      if (UNLIKELY (ret < 0))
        return libcrun_exec_affinity_error (err, ret, e);
    }

  if (config_affinity (def))
    {
      ret = execaff_request_set_config_affinity (req, config_affinity (def)->initial, config_affinity (def)->final,
                                                 config_source, &e);
      if (UNLIKELY (ret < 0))
        return libcrun_exec_affinity_error (err, ret, e);
    }

  ret = set_annotations (req, def, config_source, &e, err);
  if (UNLIKELY (ret < 0))
    return ret;

  if (config_cpus (def))
    {
      ret = execaff_request_set_config_cpus (req, config_cpus (def), config_source, &e);
      if (UNLIKELY (ret < 0))
        return libcrun_exec_affinity_error (err, ret, e);
    }

  return libcrun_exec_affinity_finish (req, node, init_pid, out, err);
}
