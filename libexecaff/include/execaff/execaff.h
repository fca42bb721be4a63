/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libexecaff — decide and apply OCI process.execCPUAffinity for exec'd
 * processes.  The stable C ABI: opaque handles, `execaff_` names, every
 * fallible call returns 0 or a negative errno and, on failure, stores an
 * error object (message naming the stage, the input and the reason) in
 * *err when err is not NULL.  Nothing here throws or aborts.
 *
 * Typical use in a runtime's exec path (see spec/decision-table.md):
 *
 *     execaff_request *req; execaff_decision *d; execaff_error *err = NULL;
 *     execaff_request_new(&req, &err);
 *     execaff_request_set_process_json(req, json, len, &err);
 *     execaff_request_set_config_file(req, "/bundle/config.json", &err);
 *     execaff_decide(NULL, req, &d, &err);
 *     if (execaff_decision_is_pinned(d)) {
 *         execaff_apply_initial(d, child, &err);   before the cgroup join
 *         ... move child into the container's cgroup ...
 *         execaff_apply_final(d, child, &err);     before the child execs
 *     }
 */
#ifndef EXECAFF_EXECAFF_H
#define EXECAFF_EXECAFF_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EXECAFF_PUBLIC __attribute__((visibility("default")))
#define EXECAFF_NODISCARD __attribute__((warn_unused_result))
#else
#define EXECAFF_PUBLIC
#define EXECAFF_NODISCARD
#endif

/* The highest CPU id a list may name (cpuset list grammar, spec/cpu-list.md). */
#define EXECAFF_MAX_CPU 65535

/* The annotation that opts a pod in (spec/decision-table.md). */
#define EXECAFF_ANNOTATION "exec-cpu-affinity.execaff.io"
/* OpenShift's annotation; only its "disable" counts: it opts a pod out
 * (spec/decision-table.md).  Since EXECAFF_1.2. */
#define EXECAFF_OPENSHIFT_ANNOTATION "performance.openshift.io/exec-cpu-affinity"

/* "MAJOR.MINOR.PATCH" of the library that is loaded. */
EXECAFF_PUBLIC const char* execaff_version(void);

/* ---- errors ------------------------------------------------------------ */

typedef struct execaff_error execaff_error;

/* The full message, e.g. `final affinity "5" is not within the container's
 * cpuset "2-3"`.  Valid until execaff_error_free. */
EXECAFF_PUBLIC const char* execaff_error_message(const execaff_error* err);
/* The negative errno the failing call returned. */
EXECAFF_PUBLIC int execaff_error_code(const execaff_error* err);
EXECAFF_PUBLIC void execaff_error_free(execaff_error* err);

/* ---- CPU sets ---------------------------------------------------------- */

typedef struct execaff_cpuset execaff_cpuset;

/* Parses a cpuset list ("0-3,7").  An empty string parses to an empty set,
 * which the field's rules read as "not set".  -EINVAL on a malformed list,
 * -ERANGE on a CPU above EXECAFF_MAX_CPU. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_cpuset_parse(const char* list, execaff_cpuset** out,
                                                          execaff_error** err);
EXECAFF_PUBLIC void execaff_cpuset_free(execaff_cpuset* set);
/* Canonical list form (sorted, merged ranges, no spaces) in a buffer the
 * caller frees with free(); NULL only when out of memory. */
EXECAFF_PUBLIC char* execaff_cpuset_format(const execaff_cpuset* set);
EXECAFF_PUBLIC size_t execaff_cpuset_count(const execaff_cpuset* set);
/* The lowest CPU id, or -1 for an empty set. */
EXECAFF_PUBLIC int execaff_cpuset_first(const execaff_cpuset* set);
EXECAFF_PUBLIC int execaff_cpuset_contains(const execaff_cpuset* set, unsigned cpu);

/* ---- node facts -------------------------------------------------------- */

typedef struct execaff_context execaff_context;

/* Reads nothing yet: node facts are read on every decision, from live
 * files under root ("/" when NULL), never cached across decisions. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_context_new(const char* root, execaff_context** out,
                                                         execaff_error** err);
EXECAFF_PUBLIC void execaff_context_free(execaff_context* ctx);

/* ---- requests: what is known about one exec ---------------------------- */

typedef struct execaff_request execaff_request;

EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_new(execaff_request** out,
                                                         execaff_error** err);
EXECAFF_PUBLIC void execaff_request_free(execaff_request* req);

/* The exec's process object (the `exec --process FILE` document). */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_process_json(execaff_request* req,
                                                                      const char* json, size_t len,
                                                                      execaff_error** err);
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_process_file(execaff_request* req,
                                                                      const char* path,
                                                                      execaff_error** err);
/* The container's config.json: its process.execCPUAffinity is the default
 * for execs that carry none, its annotations carry the pod's opt-in, its
 * linux.resources.cpu.cpus the cpuset when the cgroup cannot be read. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_config_json(execaff_request* req,
                                                                     const char* json, size_t len,
                                                                     execaff_error** err);
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_config_file(execaff_request* req,
                                                                     const char* path,
                                                                     execaff_error** err);
/* The container's live cpuset as a list, when the caller knows it. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_container_cpuset(execaff_request* req,
                                                                          const char* list,
                                                                          execaff_error** err);
/* A pid in the container (its init): its cgroup gives the live cpuset. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_container_pid(execaff_request* req,
                                                                       pid_t pid,
                                                                       execaff_error** err);
/* The CPUs the caller runs on; when never set, the calling thread's own
 * affinity at decision time. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_caller_cpus(execaff_request* req,
                                                                     const char* list,
                                                                     execaff_error** err);
/* The node's housekeeping CPUs when configured (kubelet reservedSystemCPUs);
 * otherwise they are the caller's CPUs less the isolated ones. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_housekeeping_cpus(execaff_request* req,
                                                                           const char* list,
                                                                           execaff_error** err);
/* The runtime handler's default for pods without the annotation: one of
 * the annotation's values ("first", "first-core", a CPU list, "disable"). */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_handler_default(execaff_request* req,
                                                                         const char* value,
                                                                         execaff_error** err);

/* ---- typed requests (since EXECAFF_1.2) -------------------------------- */

/* For a runtime that has parsed the documents already (crun's libocispec):
 * the values the decision reads, instead of the documents, so that nothing
 * is read or parsed twice.  Like a document, a value is kept as given and
 * judged by execaff_decide, which fails as it would for the document: a bad
 * list given with source "process file \"/p\"" is -EINVAL with
 * `process file "/p": process.execCPUAffinity.initial: invalid CPU list
 * "a": ...`.  `source` names the document in those messages; NULL or ""
 * names it as the document setters do ("exec process JSON", "config.json").
 * A list that is NULL or "" is not set, as an absent, null or "" member is.
 * A value set here replaces the same member of a document set with the
 * setters above, whichever came first; setting one twice keeps the last.
 * A setter fails only on a NULL argument it requires or out of memory. */

/* The exec's process.execCPUAffinity (the `exec --process FILE` document's). */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_process_affinity(execaff_request* req,
                                                                          const char* initial,
                                                                          const char* final,
                                                                          const char* source,
                                                                          execaff_error** err);
/* config.json's process.execCPUAffinity: the default for execs without one. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_config_affinity(execaff_request* req,
                                                                         const char* initial,
                                                                         const char* final,
                                                                         const char* source,
                                                                         execaff_error** err);
/* config.json's linux.resources.cpu.cpus: the container's cpuset when its
 * cgroup cannot be read. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_config_cpus(execaff_request* req,
                                                                     const char* cpus,
                                                                     const char* source,
                                                                     execaff_error** err);
/* One of config.json's annotations.  Only those the decision reads are kept
 * (EXECAFF_ANNOTATION and EXECAFF_OPENSHIFT_ANNOTATION); any other key is
 * accepted and ignored, so a runtime may pass them all.  The value is
 * judged by the decision, whose messages name the annotation, not its
 * document: there is no source. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_annotation(execaff_request* req,
                                                                    const char* key,
                                                                    const char* value,
                                                                    execaff_error** err);

/* ---- the node configuration (since EXECAFF_1.1) ------------------------ */

/* The node's execaff configuration, the file execaff-shim reads:
 * $EXECAFF_CONFIG when set (the file must then exist), else
 * /etc/execaff/shim.json when it exists; `path` (not NULL) names another
 * file, which must exist.  Read on every call, never cached.  The walk to it
 * opens each component with O_NOFOLLOW and checks what it opened: every
 * directory owned by root and writable by no one else (a root-owned sticky
 * directory passes), the file a regular file owned by root and not writable
 * by group or others.  A symbolic link on the path, an unknown or duplicate
 * key, a wrong type, a malformed CPU list or a half-written file is an
 * error (-EINVAL, -EPERM, -ELOOP, -ENOENT, ...) naming the file and the
 * reason.  On success *out is NULL when there is no file (the default path
 * is absent), else a configuration the caller frees. */
typedef struct execaff_node_config execaff_node_config;
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_node_config_load(const char* path,
                                                              execaff_node_config** out,
                                                              execaff_error** err);
EXECAFF_PUBLIC void execaff_node_config_free(execaff_node_config* config);
/* The file that was read.  Owned by config. */
EXECAFF_PUBLIC const char* execaff_node_config_path(const execaff_node_config* config);
/* "handler_default", or NULL when the file has none.  Owned by config. */
EXECAFF_PUBLIC const char* execaff_node_config_handler_default(const execaff_node_config* config);
/* "housekeeping_cpus", or NULL when the file has none.  Owned by config. */
EXECAFF_PUBLIC const execaff_cpuset* execaff_node_config_housekeeping_cpus(
    const execaff_node_config* config);
/* 1 when "crun_first_image_pin" is true, else 0 (also for NULL): the forked
 * crun then narrows itself before its re-execution; nothing else reads it
 * (since EXECAFF_1.2). */
EXECAFF_PUBLIC int execaff_node_config_crun_first_image_pin(const execaff_node_config* config);
/* Sets the request's handler default and housekeeping CPUs from config,
 * those it names; NULL config is a successful no-op. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_request_set_node_config(
    execaff_request* req, const execaff_node_config* config, execaff_error** err);

/* ---- decisions --------------------------------------------------------- */

typedef struct execaff_decision execaff_decision;

EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_decide(const execaff_context* ctx,
                                                    const execaff_request* req,
                                                    execaff_decision** out, execaff_error** err);
EXECAFF_PUBLIC void execaff_decision_free(execaff_decision* d);

/* Whether execaff_decide will pin an exec, asked before anything else is
 * known (since EXECAFF_1.3): 1 when the decision table asks for pinning --
 * the EXECAFF_ANNOTATION annotation, else the node config's handler
 * default, unless either annotation says "disable"; or an execCPUAffinity
 * field in the process document or config.json -- and 0 when it does not.
 * A 1 is never followed by an unpinned decision, only perhaps by an error
 * of execaff_decide (a list outside the container's cpuset); a 0 is never
 * followed by a pinned one.  `config_json` is the container's config.json
 * (required), `process_json` the exec's process document (NULL for an exec
 * given on the command line), `node` the node config (NULL: none).  A
 * document that cannot be read is -EINVAL naming it, as execaff_decide
 * would fail.  Reads no file and asks the kernel nothing: config.json is
 * skimmed for the members the decision reads, not parsed whole, so a
 * runtime can ask on its start-up path (the forked crun does, to move to
 * the housekeeping CPUs before it reads anything else). */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_exec_wants_pinning(const char* config_json,
                                                                size_t config_len,
                                                                const char* process_json,
                                                                size_t process_len,
                                                                const execaff_node_config* node,
                                                                execaff_error** err);

/* 1 when the exec is to be pinned, 0 when it is left exactly alone. */
EXECAFF_PUBLIC int execaff_decision_is_pinned(const execaff_decision* d);
/* The decided sets, or NULL when that stage is not touched.  Owned by d. */
EXECAFF_PUBLIC const execaff_cpuset* execaff_decision_initial(const execaff_decision* d);
EXECAFF_PUBLIC const execaff_cpuset* execaff_decision_final(const execaff_decision* d);
/* Which input decided: "none", "process", "config", "annotation",
 * "handler-default".  Static storage. */
EXECAFF_PUBLIC const char* execaff_decision_source(const execaff_decision* d);
/* A sentence saying why.  Owned by d. */
EXECAFF_PUBLIC const char* execaff_decision_reason(const execaff_decision* d);
/* The decision as a JSON object ({"pinned", "initial", "final", "source",
 * "reason", ...}); the caller frees it with free().  NULL on out of memory. */
EXECAFF_PUBLIC char* execaff_decision_to_json(const execaff_decision* d);

/* ---- applying ---------------------------------------------------------- */

/* Set every thread of pid to the decided initial / final set, read it back
 * and fail, naming the stage, the pid, the CPUs asked and those the kernel
 * gave, when the kernel refused or clipped.  A stage the decision leaves
 * unset is a successful no-op. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_apply_initial(const execaff_decision* d, pid_t pid,
                                                           execaff_error** err);
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_apply_final(const execaff_decision* d, pid_t pid,
                                                         execaff_error** err);
/* The same for any set; `stage` only labels messages. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_apply_cpuset(const execaff_cpuset* set, pid_t pid,
                                                          const char* stage, execaff_error** err);

/* ---- process files ----------------------------------------------------- */

/* Returns a copy of the process JSON with process.execCPUAffinity replaced
 * by the decision's sets (removed when the decision pins nothing), every
 * other byte unchanged.  *out is NUL-terminated; free it with free(). */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_process_json_with_decision(const char* json,
                                                                        size_t len,
                                                                        const execaff_decision* d,
                                                                        char** out, size_t* out_len,
                                                                        execaff_error** err);

/* ---- runtime command lines (since EXECAFF_1.3) -------------------------- */

/* A runtime's exec command line read as that runtime's own parser reads it,
 * from the library's table of every global and exec option of each release
 * (spec/runtime-options.md): runc's Go flags (-name, --name, =value), crun's
 * argp (--name[=value], unique prefixes, -dpFILE clusters, --tty's optional
 * value).  `runtime` is "runc" or "crun", `version` its release ("1.8.1";
 * NULL, or one the library does not list: the newest of that kind). */
typedef struct execaff_exec_argv execaff_exec_argv;

/* Reads argv[0..argc): the runtime's name, its global options, "exec",
 * exec's options, the container id and the command.  Fails with -EINVAL and
 * the parser's own objection (an unknown option, an ambiguous prefix, a
 * missing value: what the runtime refuses before it runs anything), with
 * -ENOENT when the command is not exec or no container id follows its
 * options, with -ENOTSUP for a runtime that is neither runc nor crun. */
EXECAFF_PUBLIC EXECAFF_NODISCARD int execaff_exec_argv_read(const char* runtime,
                                                            const char* version, int argc,
                                                            const char* const* argv,
                                                            execaff_exec_argv** out,
                                                            execaff_error** err);
EXECAFF_PUBLIC void execaff_exec_argv_free(execaff_exec_argv* a);
/* The argv index of the container id; the command, if any, follows it. */
EXECAFF_PUBLIC int execaff_exec_argv_id_index(const execaff_exec_argv* a);
/* The value the runtime takes for option `name` (the long name without
 * dashes: "root", "process", "preserve-fds") — the last one given, among
 * the global options when `global` is non-zero, else among exec's — or NULL
 * when it is not given or given without a value.  Owned by a. */
EXECAFF_PUBLIC const char* execaff_exec_argv_option(const execaff_exec_argv* a, int global,
                                                    const char* name);

/* Whether option `name` (long name without dashes, or one letter for a
 * short form) of `command` ("exec", "create", "run"; NULL: the global
 * options) takes a value: 0 no, 1 always, 2 only attached ("--tty=X",
 * "-tX"); -ENOENT when that runtime's release has no such option. */
#define EXECAFF_OPTION_FLAG 0
#define EXECAFF_OPTION_VALUE 1
#define EXECAFF_OPTION_OPTIONAL_VALUE 2
EXECAFF_PUBLIC int execaff_runtime_option_argument(const char* runtime, const char* version,
                                                   const char* command, const char* name);

#ifdef __cplusplus
}
#endif

#endif /* EXECAFF_EXECAFF_H */
