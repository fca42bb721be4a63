/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The C ABI through its public header only: success paths, every error
 * path a caller can reach, ownership, and a CPU id above 1023. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* After the standard headers: cmocka.h uses size_t, va_list and jmp_buf
 * without including their headers. */
#include <cmocka.h>
#include <execaff/execaff.h>

static void test_version(void** state) {
  (void)state;
  assert_non_null(execaff_version());
  assert_true(strlen(execaff_version()) >= 5);
}

static void test_cpuset_parse_and_format(void** state) {
  execaff_cpuset* set = NULL;
  execaff_error* err = NULL;
  char* text;
  (void)state;
  assert_int_equal(execaff_cpuset_parse(" 7, 0-3,1024-1025 ", &set, &err), 0);
  assert_null(err);
  text = execaff_cpuset_format(set);
  assert_string_equal(text, "0-3,7,1024-1025");
  free(text);
  assert_int_equal(execaff_cpuset_count(set), 7);
  assert_int_equal(execaff_cpuset_first(set), 0);
  assert_true(execaff_cpuset_contains(set, 1025));
  assert_false(execaff_cpuset_contains(set, 1026));
  execaff_cpuset_free(set);
}

static void test_cpuset_above_1023(void** state) {
  execaff_cpuset* set = NULL;
  char* text;
  (void)state;
  assert_int_equal(execaff_cpuset_parse("65535", &set, NULL), 0);
  assert_int_equal(execaff_cpuset_first(set), 65535);
  text = execaff_cpuset_format(set);
  assert_string_equal(text, "65535");
  free(text);
  execaff_cpuset_free(set);
}

static void test_cpuset_errors(void** state) {
  execaff_cpuset* set = (execaff_cpuset*)0x1;
  execaff_error* err = NULL;
  (void)state;
  assert_int_equal(execaff_cpuset_parse("3-1", &set, &err), -EINVAL);
  assert_null(set); /* output written only on success */
  assert_non_null(err);
  assert_int_equal(execaff_error_code(err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "\"3-1\""));
  assert_non_null(strstr(execaff_error_message(err), "runs backwards"));
  execaff_error_free(err);

  err = NULL;
  assert_int_equal(execaff_cpuset_parse("65536", &set, &err), -ERANGE);
  assert_non_null(strstr(execaff_error_message(err), "65535"));
  execaff_error_free(err);

  /* NULL error slot: still a clean negative return. */
  assert_int_equal(execaff_cpuset_parse("x", &set, NULL), -EINVAL);
  err = NULL;
  assert_int_equal(execaff_cpuset_parse(NULL, &set, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "list is NULL"));
  execaff_error_free(err);
}

static const char kConfig[] =
    "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},"
    "\"annotations\":{\"exec-cpu-affinity.execaff.io\":\"first\"},"
    "\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"1024-1027\"}}}}";

static void test_decide_annotation_first(void** state) {
  execaff_request* req = NULL;
  execaff_decision* d = NULL;
  execaff_error* err = NULL;
  char* text;
  char* json;
  (void)state;
  assert_int_equal(execaff_request_new(&req, &err), 0);
  assert_int_equal(execaff_request_set_config_json(req, kConfig, strlen(kConfig), &err), 0);
  assert_int_equal(execaff_request_set_caller_cpus(req, "0", &err), 0);
  assert_int_equal(execaff_decide(NULL, req, &d, &err), 0);
  assert_null(err);
  assert_true(execaff_decision_is_pinned(d));
  assert_string_equal(execaff_decision_source(d), "annotation");
  text = execaff_cpuset_format(execaff_decision_final(d));
  assert_string_equal(text, "1024");
  free(text);
  text = execaff_cpuset_format(execaff_decision_initial(d));
  assert_string_equal(text, "0,1024");
  free(text);
  assert_non_null(strstr(execaff_decision_reason(d), "first"));
  json = execaff_decision_to_json(d);
  assert_non_null(strstr(json, "\"final\":\"1024\""));
  assert_non_null(strstr(json, "\"pinned\":true"));
  free(json);
  execaff_decision_free(d);
  execaff_request_free(req);
}

static void test_decide_nothing_is_not_pinned(void** state) {
  static const char config[] = "{\"process\":{\"args\":[\"sh\"]}}";
  static const char process[] = "{\"args\":[\"true\"],\"cwd\":\"/\"}";
  execaff_request* req = NULL;
  execaff_decision* d = NULL;
  char* json;
  (void)state;
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  assert_int_equal(execaff_request_set_config_json(req, config, strlen(config), NULL), 0);
  assert_int_equal(execaff_request_set_process_json(req, process, strlen(process), NULL), 0);
  assert_int_equal(execaff_decide(NULL, req, &d, NULL), 0);
  assert_false(execaff_decision_is_pinned(d));
  assert_null(execaff_decision_initial(d));
  assert_null(execaff_decision_final(d));
  assert_string_equal(execaff_decision_source(d), "none");
  /* Applying an unpinned decision is a no-op, not an error. */
  assert_int_equal(execaff_apply_initial(d, getpid(), NULL), 0);
  assert_int_equal(execaff_apply_final(d, getpid(), NULL), 0);
  json = execaff_decision_to_json(d);
  assert_non_null(strstr(json, "\"initial\":null"));
  free(json);
  execaff_decision_free(d);
  execaff_request_free(req);
}

static void test_decide_errors(void** state) {
  static const char bad_field[] = "{\"args\":[\"true\"],\"execCPUAffinity\":{\"initial\":5}}";
  static const char outside[] = "{\"args\":[\"true\"],\"execCPUAffinity\":{\"final\":\"9\"}}";
  execaff_request* req = NULL;
  execaff_decision* d = NULL;
  execaff_error* err = NULL;
  (void)state;
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  /* Malformed process JSON is reported at decision time, naming the path. */
  assert_int_equal(execaff_request_set_process_json(req, bad_field, strlen(bad_field), &err), 0);
  assert_int_equal(execaff_decide(NULL, req, &d, &err), -EINVAL);
  assert_null(d);
  assert_non_null(strstr(execaff_error_message(err), "execCPUAffinity.initial"));
  execaff_error_free(err);
  err = NULL;

  assert_int_equal(execaff_request_set_process_json(req, outside, strlen(outside), &err), 0);
  assert_int_equal(execaff_request_set_container_cpuset(req, "1-3", &err), 0);
  assert_int_equal(execaff_decide(NULL, req, &d, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err),
                         "final affinity \"9\" is not within the container's cpuset \"1-3\""));
  execaff_error_free(err);
  err = NULL;

  assert_int_equal(execaff_request_set_container_cpuset(req, "1-", &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "container cpuset"));
  execaff_error_free(err);
  err = NULL;

  assert_int_equal(execaff_request_set_process_file(req, "/nonexistent/execaff-process.json", &err),
                   -ENOENT);
  assert_non_null(strstr(execaff_error_message(err), "/nonexistent/execaff-process.json"));
  execaff_error_free(err);
  err = NULL;

  assert_int_equal(execaff_request_set_container_pid(req, 0, &err), -EINVAL);
  execaff_error_free(err);
  err = NULL;

  assert_int_equal(execaff_decide(NULL, NULL, &d, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "req is NULL"));
  execaff_error_free(err);
  execaff_request_free(req);
}

static void test_apply_to_self(void** state) {
  execaff_cpuset* mine = NULL;
  execaff_cpuset* offline = NULL;
  execaff_error* err = NULL;
  char list[64];
  FILE* status = fopen("/proc/self/status", "r");
  char line[512];
  (void)state;
  list[0] = '\0';
  assert_non_null(status);
  while (fgets(line, sizeof line, status) != NULL) {
    if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
      sscanf(line + 18, " %63s", list);
    }
  }
  fclose(status);
  /* Re-applying our own mask succeeds. */
  assert_int_equal(execaff_cpuset_parse(list, &mine, NULL), 0);
  assert_int_equal(execaff_apply_cpuset(mine, 0, "test", &err), 0);
  /* A CPU id far beyond the machine is refused with the reason. */
  assert_int_equal(execaff_cpuset_parse("4000", &offline, NULL), 0);
  assert_int_equal(execaff_apply_cpuset(offline, 0, "final", &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "final affinity \"4000\""));
  assert_non_null(strstr(execaff_error_message(err), "none of them is online"));
  execaff_error_free(err);
  execaff_cpuset_free(mine);
  execaff_cpuset_free(offline);
}

static void test_process_json_rewrite(void** state) {
  static const char config[] =
      "{\"annotations\":{\"exec-cpu-affinity.execaff.io\":\"1\"},"
      "\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"1\"}}}}";
  static const char process[] = "{\"args\":[\"true\"],\"big\":18446744073709551616}";
  execaff_request* req = NULL;
  execaff_decision* d = NULL;
  char* out = NULL;
  size_t out_len = 0;
  (void)state;
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  assert_int_equal(execaff_request_set_config_json(req, config, strlen(config), NULL), 0);
  assert_int_equal(execaff_request_set_process_json(req, process, strlen(process), NULL), 0);
  assert_int_equal(execaff_request_set_caller_cpus(req, "0", NULL), 0);
  assert_int_equal(execaff_decide(NULL, req, &d, NULL), 0);
  assert_int_equal(
      execaff_process_json_with_decision(process, strlen(process), d, &out, &out_len, NULL), 0);
  assert_int_equal(strlen(out), out_len);
  assert_non_null(strstr(out, "\"execCPUAffinity\":{\"initial\":\"0-1\",\"final\":\"1\"}"));
  assert_non_null(strstr(out, "18446744073709551616"));
  free(out);
  execaff_decision_free(d);
  execaff_request_free(req);
}

/* ---- typed requests (EXECAFF_1.2) ------------------------------------- */

/* What a runtime holds after parsing the documents: the process file's
 * field, config.json's field, its cpus and its two annotations.  NULL is
 * "not in the document". */
struct typed_inputs {
  const char* process_initial;
  const char* process_final;
  const char* config_initial;
  const char* config_final;
  const char* config_cpus;
  const char* annotation;
  const char* openshift;
};

static void append(char* out, size_t size, const char* text) {
  strncat(out, text, size - strlen(out) - 1);
}

/* ,"execCPUAffinity":{...} when either list is given. */
static void append_affinity(char* out, size_t size, const char* initial, const char* final) {
  if (initial == NULL && final == NULL) return;
  append(out, size, ",\"execCPUAffinity\":{\"initial\":\"");
  append(out, size, initial != NULL ? initial : "");
  append(out, size, "\",\"final\":\"");
  append(out, size, final != NULL ? final : "");
  append(out, size, "\"}");
}

/* The same inputs as documents: the process file (top level) and config.json. */
static void process_document(const struct typed_inputs* in, char* out, size_t size) {
  out[0] = '\0';
  append(out, size, "{\"args\":[\"true\"]");
  append_affinity(out, size, in->process_initial, in->process_final);
  append(out, size, "}");
}

static void config_document(const struct typed_inputs* in, char* out, size_t size) {
  out[0] = '\0';
  append(out, size, "{\"process\":{\"args\":[\"sh\"]");
  append_affinity(out, size, in->config_initial, in->config_final);
  append(out, size, "},\"annotations\":{\"other\":\"x\"");
  if (in->annotation != NULL) {
    append(out, size, ",\"" EXECAFF_ANNOTATION "\":\"");
    append(out, size, in->annotation);
    append(out, size, "\"");
  }
  if (in->openshift != NULL) {
    append(out, size, ",\"" EXECAFF_OPENSHIFT_ANNOTATION "\":\"");
    append(out, size, in->openshift);
    append(out, size, "\"");
  }
  append(out, size, "}");
  if (in->config_cpus != NULL) {
    append(out, size, ",\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"");
    append(out, size, in->config_cpus);
    append(out, size, "\"}}}");
  }
  append(out, size, "}");
}

/* The decision as JSON, or "error <code>: <message>"; the caller frees it.
 * The caller's CPUs and the housekeeping ones are given, so that nothing
 * depends on where the test runs. */
static char* outcome(execaff_request* req) {
  execaff_decision* d = NULL;
  execaff_error* err = NULL;
  char* text;
  assert_int_equal(execaff_request_set_caller_cpus(req, "0-1", NULL), 0);
  assert_int_equal(execaff_request_set_housekeeping_cpus(req, "0", NULL), 0);
  if (execaff_decide(NULL, req, &d, &err) < 0) {
    const char* message = execaff_error_message(err);
    text = malloc(strlen(message) + 32);
    assert_non_null(text);
    sprintf(text, "error %d: %s", execaff_error_code(err), message);
    execaff_error_free(err);
    assert_null(d);
    return text;
  }
  assert_null(err);
  text = execaff_decision_to_json(d);
  assert_non_null(text);
  execaff_decision_free(d);
  return text;
}

/* The inputs as a document request. */
static execaff_request* document_request(const struct typed_inputs* in) {
  char process[1024];
  char config[1024];
  execaff_request* req = NULL;
  process_document(in, process, sizeof process);
  config_document(in, config, sizeof config);
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  assert_int_equal(execaff_request_set_process_json(req, process, strlen(process), NULL), 0);
  assert_int_equal(execaff_request_set_config_json(req, config, strlen(config), NULL), 0);
  return req;
}

/* The document request, with the sources crun's fork names. */
static char* document_outcome(const struct typed_inputs* in) {
  execaff_request* req = document_request(in);
  char* text = outcome(req);
  execaff_request_free(req);
  return text;
}

static char* typed_outcome(const struct typed_inputs* in) {
  execaff_request* req = NULL;
  char* text;
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  /* NULL sources: named as the document setters name theirs. */
  assert_int_equal(
      execaff_request_set_process_affinity(req, in->process_initial, in->process_final, NULL, NULL),
      0);
  assert_int_equal(
      execaff_request_set_config_affinity(req, in->config_initial, in->config_final, NULL, NULL),
      0);
  if (in->config_cpus != NULL) {
    assert_int_equal(execaff_request_set_config_cpus(req, in->config_cpus, NULL, NULL), 0);
  }
  assert_int_equal(execaff_request_set_annotation(req, "other", "x", NULL), 0);
  if (in->annotation != NULL) {
    assert_int_equal(execaff_request_set_annotation(req, EXECAFF_ANNOTATION, in->annotation, NULL),
                     0);
  }
  if (in->openshift != NULL) {
    assert_int_equal(
        execaff_request_set_annotation(req, EXECAFF_OPENSHIFT_ANNOTATION, in->openshift, NULL), 0);
  }
  text = outcome(req);
  execaff_request_free(req);
  return text;
}

static void test_typed_request_decides_as_documents(void** state) {
  static const struct typed_inputs cases[] = {
      /* Nothing opts in. */
      {NULL, NULL, NULL, NULL, "0-3", NULL, NULL},
      {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
      /* The process file's field, config.json's, both; "" is not set. */
      {"0", "1", NULL, NULL, "0-3", NULL, NULL},
      {NULL, NULL, "0-1", "2", "0-3", NULL, NULL},
      {"1", NULL, "0", "3", "0-3", NULL, NULL},
      {"", "", "0", "3", "0-3", NULL, NULL},
      {"0", "", NULL, NULL, "0-3", NULL, NULL},
      /* An initial outside the caller's CPUs, repaired (R21). */
      {"3", "3", NULL, NULL, "2-3", NULL, NULL},
      /* The annotation, over a field; the cpuset from config.json, named. */
      {"0", "1", NULL, NULL, "2-3", "first", NULL},
      {NULL, NULL, NULL, NULL, "1024-1027", "first-core", NULL},
      {NULL, NULL, NULL, NULL, "2-5", "3-4", NULL},
      /* Opt-outs. */
      {"0", "1", NULL, NULL, "0-3", "disable", NULL},
      {"0", "1", NULL, NULL, "0-3", "first", "disable"},
      {NULL, NULL, NULL, NULL, "0-3", NULL, "first"},
      /* What only the decision judges: the same error either way. */
      {"a", "1", NULL, NULL, "0-3", NULL, NULL},
      {NULL, "3-1", NULL, NULL, "0-3", NULL, NULL},
      {NULL, NULL, " , ", NULL, "0-3", NULL, NULL},
      {NULL, NULL, NULL, "0,65536", "0-3", NULL, NULL},
      {NULL, NULL, NULL, NULL, "0-", "first", NULL},
      {NULL, NULL, NULL, NULL, "0-3", "sometimes", NULL},
      {NULL, NULL, NULL, NULL, "0-3", "9", NULL},
      {"0", "9", NULL, NULL, "0-3", NULL, NULL},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char* document = document_outcome(&cases[i]);
    char* typed = typed_outcome(&cases[i]);
    if (strcmp(document, typed) != 0) {
      fail_msg("case %zu: documents give\n  %s\ntyped values give\n  %s", i, document, typed);
    }
    free(document);
    free(typed);
  }
}

/* A source given names the input, in the same shape as the document's. */
static void test_typed_request_names_the_source(void** state) {
  execaff_request* req = NULL;
  char* text;
  (void)state;
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  /* A setter does not judge: the list is refused by the decision. */
  assert_int_equal(execaff_request_set_process_affinity(req, "0", "x", "process file \"/p\"", NULL),
                   0);
  text = outcome(req);
  assert_string_equal(text,
                      "error -22: process file \"/p\": process.execCPUAffinity.final: invalid CPU "
                      "list \"x\": item \"x\" at offset 0 is not a CPU number or a range of them");
  free(text);
  /* The last call wins. */
  assert_int_equal(execaff_request_set_process_affinity(req, NULL, NULL, NULL, NULL), 0);
  assert_int_equal(execaff_request_set_config_affinity(req, "1-", NULL, "config \"/c.json\"", NULL),
                   0);
  text = outcome(req);
  assert_string_equal(
      text,
      "error -22: config \"/c.json\": process.execCPUAffinity.initial: invalid CPU "
      "list \"1-\": item \"1-\" at offset 0 is not a CPU number or a range of them");
  free(text);
  /* The cpuset's document is named in the reason. */
  assert_int_equal(execaff_request_set_config_affinity(req, NULL, NULL, NULL, NULL), 0);
  assert_int_equal(execaff_request_set_config_cpus(req, "1", "config \"/c.json\"", NULL), 0);
  assert_int_equal(execaff_request_set_annotation(req, EXECAFF_ANNOTATION, "first", NULL), 0);
  text = outcome(req);
  assert_non_null(strstr(text, "(config \\\"/c.json\\\" linux.resources.cpu.cpus)"));
  assert_non_null(strstr(text, "\"final\":\"1\""));
  free(text);
  execaff_request_free(req);
}

/* A typed value replaces the same member of a document, in either order;
 * the document's other members stay. */
static void test_typed_request_over_documents(void** state) {
  static const char config[] =
      "{\"process\":{\"execCPUAffinity\":{\"final\":\"3\"}},"
      "\"annotations\":{\"exec-cpu-affinity.execaff.io\":\"first\"},"
      "\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"2-3\"}}}}";
  execaff_request* req = NULL;
  char* text;
  (void)state;
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  assert_int_equal(execaff_request_set_annotation(req, EXECAFF_ANNOTATION, "disable", NULL), 0);
  assert_int_equal(execaff_request_set_config_json(req, config, strlen(config), NULL), 0);
  text = outcome(req);
  /* The annotation turned off; config.json's field and cpus still count. */
  assert_non_null(strstr(text, "\"source\":\"config\""));
  assert_non_null(strstr(text, "\"final\":\"3\""));
  assert_non_null(strstr(text, "annotation exec-cpu-affinity.execaff.io=disable"));
  free(text);
  assert_int_equal(execaff_request_set_config_affinity(req, "", "", NULL, NULL), 0);
  text = outcome(req);
  assert_non_null(strstr(text, "\"pinned\":false"));
  free(text);
  execaff_request_free(req);
}

static void test_typed_request_nulls(void** state) {
  execaff_request* req = NULL;
  execaff_error* err = NULL;
  (void)state;
  assert_int_equal(execaff_request_set_process_affinity(NULL, "0", "1", NULL, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "req is NULL"));
  execaff_error_free(err);
  err = NULL;
  assert_int_equal(execaff_request_set_config_affinity(NULL, "0", "1", NULL, NULL), -EINVAL);
  assert_int_equal(execaff_request_set_config_cpus(NULL, "0", NULL, NULL), -EINVAL);
  assert_int_equal(execaff_request_set_annotation(NULL, "k", "v", NULL), -EINVAL);
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  assert_int_equal(execaff_request_set_annotation(req, NULL, "first", &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "key is NULL"));
  execaff_error_free(err);
  err = NULL;
  assert_int_equal(execaff_request_set_annotation(req, EXECAFF_ANNOTATION, NULL, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "value is NULL"));
  execaff_error_free(err);
  /* NULL lists and sources are "not set" and the default names. */
  assert_int_equal(execaff_request_set_process_affinity(req, NULL, NULL, NULL, NULL), 0);
  assert_int_equal(execaff_request_set_config_affinity(req, NULL, NULL, "", NULL), 0);
  assert_int_equal(execaff_request_set_config_cpus(req, NULL, NULL, NULL), 0);
  execaff_request_free(req);
}

static void test_frees_accept_null(void** state) {
  (void)state;
  execaff_error_free(NULL);
  execaff_cpuset_free(NULL);
  execaff_context_free(NULL);
  execaff_request_free(NULL);
  execaff_decision_free(NULL);
  execaff_node_config_free(NULL);
  assert_int_equal(execaff_decision_is_pinned(NULL), 0);
  assert_int_equal(execaff_cpuset_first(NULL), -1);
}

/* ---- the node configuration ------------------------------------------- */

/* A private directory for config files: root-owned (mkdtemp, 0700) under
 * the root-owned sticky /tmp, so only the file itself decides. */
static char node_dir[64];

static const char* node_file(const char* name, const char* text, mode_t mode) {
  static char path[128];
  FILE* f;
  snprintf(path, sizeof path, "%s/%s", node_dir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  assert_int_equal(chmod(path, mode), 0);
  return path;
}

static int node_setup(void** state) {
  (void)state;
  strcpy(node_dir, "/tmp/execaff-capi-XXXXXX");
  return mkdtemp(node_dir) != NULL ? 0 : -1;
}

static int node_teardown(void** state) {
  char command[96];
  (void)state;
  snprintf(command, sizeof command, "rm -rf '%s'", node_dir);
  return system(command) == 0 ? 0 : -1;
}

static void expect_node_error(const char* path, int code, const char* needle) {
  execaff_node_config* config = (execaff_node_config*)0x1;
  execaff_error* err = NULL;
  assert_int_equal(execaff_node_config_load(path, &config, &err), code);
  assert_null(config);
  assert_non_null(err);
  if (strstr(execaff_error_message(err), needle) == NULL ||
      strstr(execaff_error_message(err), path) == NULL) {
    fail_msg("message %s names neither %s nor %s", execaff_error_message(err), needle, path);
  }
  execaff_error_free(err);
}

static void test_node_config_read(void** state) {
  execaff_node_config* config = NULL;
  execaff_request* req = NULL;
  execaff_decision* d = NULL;
  execaff_error* err = NULL;
  const char* path;
  char* text;
  static const char config_json[] = "{\"process\":{}}";
  (void)state;
  if (geteuid() != 0) skip(); /* the file must be owned by root */
  path = node_file("ok.json",
                   "{\"runtime\": \"/usr/bin/crun\", \"housekeeping_cpus\": "
                   "\"0,1024\", \"handler_default\": \"first\"}",
                   0644);
  assert_int_equal(execaff_node_config_load(path, &config, &err), 0);
  assert_null(err);
  assert_string_equal(execaff_node_config_path(config), path);
  assert_string_equal(execaff_node_config_handler_default(config), "first");
  text = execaff_cpuset_format(execaff_node_config_housekeeping_cpus(config));
  assert_string_equal(text, "0,1024");
  free(text);
  /* No key: the fork narrows itself after its re-execution, as before. */
  assert_int_equal(execaff_node_config_crun_first_image_pin(config), 0);
  assert_int_equal(execaff_node_config_crun_first_image_pin(NULL), 0);

  /* The handler default opts in a pod without the annotation, and the
   * housekeeping CPUs bound `initial`. */
  assert_int_equal(execaff_request_new(&req, NULL), 0);
  assert_int_equal(execaff_request_set_config_json(req, config_json, strlen(config_json), NULL), 0);
  assert_int_equal(execaff_request_set_container_cpuset(req, "2-3", NULL), 0);
  assert_int_equal(execaff_request_set_caller_cpus(req, "0-3", NULL), 0);
  assert_int_equal(execaff_request_set_node_config(req, config, NULL), 0);
  assert_int_equal(execaff_request_set_node_config(req, NULL, NULL), 0); /* no-op */
  assert_int_equal(execaff_decide(NULL, req, &d, &err), 0);
  assert_true(execaff_decision_is_pinned(d));
  assert_string_equal(execaff_decision_source(d), "handler-default");
  text = execaff_cpuset_format(execaff_decision_initial(d));
  assert_string_equal(text, "0,2");
  free(text);
  execaff_decision_free(d);
  execaff_request_free(req);
  execaff_node_config_free(config);

  /* The fork's key, true and false. */
  assert_int_equal(
      execaff_node_config_load(node_file("pin.json", "{\"crun_first_image_pin\": true}", 0644),
                               &config, NULL),
      0);
  assert_int_equal(execaff_node_config_crun_first_image_pin(config), 1);
  execaff_node_config_free(config);
  assert_int_equal(
      execaff_node_config_load(node_file("nopin.json", "{\"crun_first_image_pin\": false}", 0644),
                               &config, NULL),
      0);
  assert_int_equal(execaff_node_config_crun_first_image_pin(config), 0);
  execaff_node_config_free(config);

  /* path NULL: $EXECAFF_CONFIG names the file. */
  config = (execaff_node_config*)0x1;
  assert_int_equal(setenv("EXECAFF_CONFIG", path, 1), 0);
  assert_int_equal(execaff_node_config_load(NULL, &config, NULL), 0);
  assert_non_null(config);
  assert_string_equal(execaff_node_config_path(config), path);
  execaff_node_config_free(config);
  assert_int_equal(unsetenv("EXECAFF_CONFIG"), 0);
}

static void test_node_config_errors(void** state) {
  char link[160];
  char sub[160];
  char missing[160];
  const char* path;
  (void)state;
  if (geteuid() != 0) skip();
  expect_node_error(
      node_file("dup.json", "{\"runtime\":\"/usr/bin/runc\",\"runtime\":\"/bin/false\"}", 0644),
      -EINVAL, "duplicate key \"runtime\"");
  expect_node_error(node_file("half.json", "{\"housekeeping_cpus\": \"0\", \"hand", 0644), -EINVAL,
                    "malformed JSON near byte offset");
  /* One policy for every document execaff reads: no comments. */
  expect_node_error(node_file("comment.json", "{\"debug\": true /* on */}", 0644), -EINVAL,
                    "comments are not enabled");
  expect_node_error(node_file("empty.json", "", 0644), -EINVAL, "the document is empty");
  expect_node_error(node_file("key.json", "{\"handler_defualt\": \"first\"}", 0644), -EINVAL,
                    "unknown key \"handler_defualt\"");
  expect_node_error(node_file("hk.json", "{\"housekeeping_cpus\": \"0-99999\"}", 0644), -ERANGE,
                    "CPU 99999 at offset 2");
  expect_node_error(node_file("type.json", "{\"handler_default\": [\"first\"]}", 0644), -EINVAL,
                    "\"handler_default\" must be a string");
  expect_node_error(node_file("pinbad.json", "{\"crun_first_image_pin\": \"yes\"}", 0644), -EINVAL,
                    "\"crun_first_image_pin\" must be true or false");
  expect_node_error(node_file("gw.json", "{}", 0664), -EPERM, "writable by group or others");

  path = node_file("target.json", "{}", 0644);
  snprintf(link, sizeof link, "%s/link.json", node_dir);
  assert_int_equal(symlink(path, link), 0);
  expect_node_error(link, -ELOOP, "is a symbolic link");

  /* A directory on the path that others may write: they could swap the file. */
  snprintf(sub, sizeof sub, "%s/open", node_dir);
  assert_int_equal(mkdir(sub, 0777), 0);
  assert_int_equal(chmod(sub, 0777), 0);
  snprintf(sub, sizeof sub, "%s/open/shim.json", node_dir);
  node_file("open/shim.json", "{}", 0644);
  expect_node_error(sub, -EPERM, "writable by group or others (mode 777)");

  snprintf(missing, sizeof missing, "%s/missing.json", node_dir);
  expect_node_error(missing, -ENOENT, "No such file or directory");
}

/* ---- execaff_exec_wants_pinning (EXECAFF_1.3) ----------------------- */

/* The decision, with the node config, as "pinned", "unpinned" or "error". */
static const char* decided(const struct typed_inputs* in, const execaff_node_config* node) {
  execaff_request* req = document_request(in);
  const char* verdict;
  char* text;
  assert_int_equal(execaff_request_set_node_config(req, node, NULL), 0);
  text = outcome(req);
  verdict = strncmp(text, "{\"pinned\":true", 14) == 0    ? "pinned"
            : strncmp(text, "{\"pinned\":false", 15) == 0 ? "unpinned"
                                                           : "error";
  free(text);
  execaff_request_free(req);
  return verdict;
}

static int wants(const struct typed_inputs* in, const execaff_node_config* node) {
  char process[1024];
  char config[1024];
  process_document(in, process, sizeof process);
  config_document(in, config, sizeof config);
  return execaff_exec_wants_pinning(config, strlen(config), process, strlen(process), node, NULL);
}

/* The answer is the decision's: 1 is followed by a pinned decision (or an
 * error), 0 by an unpinned one, an error by an error -- for each case with
 * and without a handler default. */
static void test_wants_pinning_agrees_with_decide(void** state) {
  static const struct {
    struct typed_inputs in;
    int without_default;  /* the expected answer without a node config */
    int with_default;     /* ... with handler_default "first" */
  } cases[] = {
      {{NULL, NULL, NULL, NULL, NULL, NULL, NULL}, 0, 1},
      {{NULL, NULL, NULL, NULL, NULL, "first", NULL}, 1, 1},
      {{NULL, NULL, NULL, NULL, NULL, "0-1", NULL}, 1, 1},
      {{NULL, NULL, NULL, NULL, NULL, "disable", NULL}, 0, 0},
      {{NULL, NULL, NULL, NULL, NULL, NULL, "disable"}, 0, 0},
      /* The OpenShift annotation can only opt out. */
      {{NULL, NULL, NULL, NULL, NULL, NULL, "first"}, 0, 1},
      /* An opt-out turns the policy off, not the field. */
      {{"0", NULL, NULL, NULL, NULL, "disable", NULL}, 1, 1},
      {{NULL, NULL, NULL, "1", NULL, NULL, "disable"}, 1, 1},
      {{"0", "1", NULL, NULL, NULL, NULL, NULL}, 1, 1},
      {{NULL, NULL, "0", NULL, "0-1", NULL, NULL}, 1, 1},
      /* Empty lists are not set. */
      {{"", "", "", "", NULL, NULL, NULL}, 0, 1},
      /* Unreadable: the decision fails on the same bytes. */
      {{"a", NULL, NULL, NULL, NULL, NULL, NULL}, -EINVAL, -EINVAL},
      {{NULL, NULL, NULL, "1-", NULL, "disable", NULL}, -EINVAL, -EINVAL},
  };
  execaff_node_config* node = NULL;
  size_t i;
  (void)state;
  assert_int_equal(execaff_node_config_load(
                       node_file("default.json", "{\"handler_default\": \"first\"}", 0644), &node,
                       NULL),
                   0);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const execaff_node_config* nodes[] = {NULL, node};
    const int expected[] = {cases[i].without_default, cases[i].with_default};
    size_t n;
    for (n = 0; n < 2; n++) {
      const int got = wants(&cases[i].in, nodes[n]);
      const char* verdict = decided(&cases[i].in, nodes[n]);
      if (got != expected[n]) fail_msg("case %zu node %zu: %d, expected %d", i, n, got, expected[n]);
      if ((got == 0 && strcmp(verdict, "unpinned") != 0) ||
          (got == 1 && strcmp(verdict, "unpinned") == 0) ||
          (got < 0 && strcmp(verdict, "error") != 0)) {
        fail_msg("case %zu node %zu: answer %d, decision %s", i, n, got, verdict);
      }
    }
  }
  execaff_node_config_free(node);
}

/* What a byte scan cannot see, the reader does: an escaped key (the skim
 * gives up and the whole document is read), a key under another member,
 * null, and the process file's absence. */
static void test_wants_pinning_reads_json(void** state) {
  static const char escaped[] =
      "{\"annotations\":{\"exec-cpu-affinity.execaff.\\u0069o\":\"first\"}}";
  static const char nested[] =
      "{\"annotations\":{\"x\":\"{\\\"exec-cpu-affinity.execaff.io\\\":\\\"first\\\"}\"},"
      "\"linux\":{\"execCPUAffinity\":{\"final\":\"1\"}}}";
  static const char field[] = "{\"process\":{\"execCPUAffinity\":{\"final\":\"1\"}}}";
  static const char null_field[] = "{\"execCPUAffinity\":null,\"args\":[\"true\"]}";
  static const char empty_field[] = "{\"execCPUAffinity\":{},\"args\":[\"true\"]}";
  (void)state;
  assert_int_equal(execaff_exec_wants_pinning(escaped, strlen(escaped), NULL, 0, NULL, NULL), 1);
  assert_int_equal(execaff_exec_wants_pinning(nested, strlen(nested), NULL, 0, NULL, NULL), 0);
  assert_int_equal(execaff_exec_wants_pinning(field, strlen(field), NULL, 0, NULL, NULL), 1);
  /* The process file's own field, null or empty, leaves config.json's. */
  assert_int_equal(execaff_exec_wants_pinning(field, strlen(field), null_field,
                                              strlen(null_field), NULL, NULL),
                   1);
  assert_int_equal(execaff_exec_wants_pinning(nested, strlen(nested), empty_field,
                                              strlen(empty_field), NULL, NULL),
                   0);
}

static void test_wants_pinning_errors(void** state) {
  static const char config[] = "{\"annotations\":{\"" EXECAFF_ANNOTATION "\":\"first\"}";
  static const char twice[] =
      "{\"annotations\":{\"" EXECAFF_ANNOTATION "\":\"first\",\"" EXECAFF_ANNOTATION
      "\":\"disable\"}}";
  static const char process[] = "{\"execCPUAffinity\":{\"initial\":7}}";
  execaff_error* err = NULL;
  (void)state;
  assert_int_equal(execaff_exec_wants_pinning(NULL, 0, NULL, 0, NULL, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "config_json is NULL"));
  execaff_error_free(err);
  err = NULL;
  /* Malformed (one brace short), a key named twice, a wrong type. */
  assert_int_equal(execaff_exec_wants_pinning(config, strlen(config), NULL, 0, NULL, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "config.json"));
  execaff_error_free(err);
  err = NULL;
  assert_int_equal(execaff_exec_wants_pinning(twice, strlen(twice), NULL, 0, NULL, &err), -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), EXECAFF_ANNOTATION));
  execaff_error_free(err);
  err = NULL;
  assert_int_equal(execaff_exec_wants_pinning("{}", 2, process, strlen(process), NULL, &err),
                   -EINVAL);
  assert_non_null(strstr(execaff_error_message(err), "execCPUAffinity.initial"));
  execaff_error_free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_cpuset_parse_and_format),
      cmocka_unit_test(test_cpuset_above_1023),
      cmocka_unit_test(test_cpuset_errors),
      cmocka_unit_test(test_decide_annotation_first),
      cmocka_unit_test(test_decide_nothing_is_not_pinned),
      cmocka_unit_test(test_decide_errors),
      cmocka_unit_test(test_apply_to_self),
      cmocka_unit_test(test_process_json_rewrite),
      cmocka_unit_test(test_typed_request_decides_as_documents),
      cmocka_unit_test(test_typed_request_names_the_source),
      cmocka_unit_test(test_typed_request_over_documents),
      cmocka_unit_test(test_typed_request_nulls),
      cmocka_unit_test(test_frees_accept_null),
      cmocka_unit_test_setup_teardown(test_node_config_read, node_setup, node_teardown),
      cmocka_unit_test_setup_teardown(test_node_config_errors, node_setup, node_teardown),
      cmocka_unit_test_setup_teardown(test_wants_pinning_agrees_with_decide, node_setup,
                                      node_teardown),
      cmocka_unit_test(test_wants_pinning_reads_json),
      cmocka_unit_test(test_wants_pinning_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
