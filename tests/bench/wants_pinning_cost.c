/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What execaff_exec_wants_pinning costs a runtime's start-up path (the
 * forked crun asks it before it has read anything else): reads
 * CONFIG_JSON and, when given, PROCESS_JSON, then asks N times.  Run under
 * callgrind twice with different N and divide the difference in
 * instructions by the difference in N for the cost of one call:
 *
 *   valgrind --tool=callgrind wants_pinning_cost 1 config.json [process.json]
 *   valgrind --tool=callgrind wants_pinning_cost 101 config.json [process.json]
 *
 * Prints the answer, so that the call is not optimised away and the
 * reader sees which path (pinned or not) was measured. */
#include <execaff/execaff.h>

#include <stdio.h>
#include <stdlib.h>

static char* slurp(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  char* text;
  long size;
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    perror(path);
    exit(2);
  }
  text = malloc((size_t)size + 1);
  if (text == NULL || fread(text, 1, (size_t)size, f) != (size_t)size) {
    perror(path);
    exit(2);
  }
  fclose(f);
  *len = (size_t)size;
  return text;
}

int main(int argc, char** argv) {
  size_t config_len = 0;
  size_t process_len = 0;
  char* config;
  char* process = NULL;
  int rounds;
  int answer = 0;
  int i;
  if (argc < 3 || argc > 4 || (rounds = atoi(argv[1])) <= 0) {
    fprintf(stderr, "usage: %s N CONFIG_JSON [PROCESS_JSON]\n", argv[0]);
    return 2;
  }
  config = slurp(argv[2], &config_len);
  if (argc == 4) process = slurp(argv[3], &process_len);
  for (i = 0; i < rounds; i++) {
    execaff_error* err = NULL;
    answer = execaff_exec_wants_pinning(config, config_len, process, process_len, NULL, &err);
    if (answer < 0) {
      fprintf(stderr, "%s\n", execaff_error_message(err));
      execaff_error_free(err);
      return 1;
    }
  }
  printf("%d\n", answer);
  free(config);
  free(process);
  return 0;
}
